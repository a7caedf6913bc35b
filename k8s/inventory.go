package k8s

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// ResourceGPU is the extended resource of whole GPUs (NVIDIA device plugin).
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// Label, annotation and resource-name prefixes mirage reads and writes.
const (
	MIGPrefix                = "nvidia.com/mig-"                // MIG slices, e.g. nvidia.com/mig-1g.5gb
	LabelGPUProduct          = "nvidia.com/gpu.product"         // GPU product (GPU feature discovery)
	DefaultTeamLabel         = "mirage.io/team"                 // pod label naming the team
	LabelBorrowed            = "mirage.io/borrowed"             // "true" on borrowed (preemptible) work
	LabelChain               = "mirage.io/chain"                // chain id of a segment
	AnnotationComment        = "mirage.io/comment"              // SubmitRequest.Comment, verbatim
	AnnotationCheckpoint     = "mirage.io/checkpoint-requested" // RFC 3339 time of the last checkpoint request
	AnnotationSignal         = "mirage.io/checkpoint-signal"    // signal named in the last checkpoint request
	AnnotationLastCheckpoint = "mirage.io/last-checkpoint"      // RFC 3339 time of the workload's last completed checkpoint (written by the workload)
)

// Mapping says how pods are attributed to teams.
type Mapping struct {
	TeamLabel      string            // pod label naming the team; "" means DefaultTeamLabel
	NamespaceTeams map[string]string // namespace → team; wins over the label for mapped namespaces
	// Strict: the namespace mapping alone decides. A pod's labels are its
	// owner's to set, so with the admin's mapping (the rules file's team
	// namespaces) a pod in an unmapped namespace has no team, whatever its
	// label says.
	Strict bool
	// BorrowedClass is the priority class mirage gives the borrowed work it
	// admits: with it, a pod is borrowed work exactly when it has this class
	// (a pod's priority class is fixed at creation, while its labels are its
	// owner's to change); "" = the label mirage.io/borrowed decides.
	BorrowedClass string
}

// Borrowed says whether a pod is borrowed work: its priority class when
// BorrowedClass is set, else its mirage.io/borrowed label.
func (m Mapping) Borrowed(pod *corev1.Pod) bool {
	if m.BorrowedClass != "" {
		return pod.Spec.PriorityClassName == m.BorrowedClass
	}
	return pod.Labels[LabelBorrowed] == "true"
}

// NewMapping is the mapping of a team label key, NAMESPACE=TEAM pairs (the
// --namespace-team flags) and the admin's namespace mapping (the rules
// file's, WithAdmin).
func NewMapping(teamLabel string, pairs []string, admin map[string]string) (Mapping, error) {
	nt, err := ParseNamespaceTeams(pairs)
	if err != nil {
		return Mapping{}, err
	}
	return Mapping{TeamLabel: teamLabel, NamespaceTeams: nt}.WithAdmin(admin)
}

// WithAdmin adds the admin's namespace mapping (team.Config.NamespaceTeams)
// to m and makes it Strict; a namespace both map to different teams is an
// error. An empty admin mapping leaves m as it is.
func (m Mapping) WithAdmin(admin map[string]string) (Mapping, error) {
	if len(admin) == 0 {
		return m, nil
	}
	out := maps.Clone(admin)
	for ns, t := range m.NamespaceTeams {
		if a, ok := admin[ns]; ok && a != t {
			return m, fmt.Errorf("--namespace-team %s=%s: the rules file maps namespace %s to team %s", ns, t, ns, a)
		}
		out[ns] = t
	}
	m.NamespaceTeams, m.Strict = out, true
	return m, nil
}

// ParseNamespaceTeams reads NAMESPACE=TEAM pairs (mirage's
// --namespace-team) into a NamespaceTeams map; no pair is a nil map.
func ParseNamespaceTeams(pairs []string) (map[string]string, error) {
	var m map[string]string
	for _, kv := range pairs {
		ns, team, ok := strings.Cut(kv, "=")
		if !ok || ns == "" || team == "" {
			return nil, fmt.Errorf("--namespace-team %q: want NAMESPACE=TEAM", kv)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[ns] = team
	}
	return m, nil
}

// Team returns the team of a pod: the namespace mapping, else (unless
// Strict) the team label, else "".
func (m Mapping) Team(pod *corev1.Pod) string {
	if t, ok := m.NamespaceTeams[pod.Namespace]; ok {
		return t
	}
	if m.Strict {
		return ""
	}
	return m.label(pod)
}

// label is the team a pod's label names.
func (m Mapping) label(pod *corev1.Pod) string { return pod.Labels[m.teamKey()] }

// teamKey is the key of the team label.
func (m Mapping) teamKey() string {
	if m.TeamLabel == "" {
		return DefaultTeamLabel
	}
	return m.TeamLabel
}

// Count is an allocatable amount and how much of it is in use.
type Count struct {
	Allocatable int64 // from node.status.allocatable
	Used        int64 // requested by pods bound to the node
}

// NodeInventory is one node's GPUs and who uses them.
type NodeInventory struct {
	Name     string                // node name
	State    provisioner.NodeState // up, drained (cordoned) or down (not ready)
	Cordoned bool                  // spec.unschedulable
	Ready    bool                  // Ready condition is True
	GPUType  string                // label nvidia.com/gpu.product
	GPUs     int                   // allocatable nvidia.com/gpu
	Used     int                   // GPUs requested by pods bound here
	Borrowed int                   // of Used, by borrowed pods
	Free     int                   // GPUs - Used on an up node, else 0 (never negative)
	Pods     int                   // GPU pods bound here
	ByTeam   map[string]int        // GPUs used per team ("" = no team)
	MIG      map[string]Count      // MIG resources (nvidia.com/mig-*) by name
	Labels   map[string]string     // node labels
}

// TeamInventory is one team's GPU use across the cluster. Quota-based figures
// (nominal GPUs, free quota) belong to the provisioner's team rules.
type TeamInventory struct {
	Team     string // team name ("" = pods without a team)
	Used     int    // GPUs held by the team's bound pods, borrowed included
	Borrowed int    // of Used, GPUs held as borrowed work
	Pods     int    // bound GPU pods
	Pending  int    // unbound pods of the team (waiting for placement)
}

// Inventory is the GPU inventory of a cluster at one instant.
type Inventory struct {
	Time     time.Time         // when the objects were listed
	Nodes    []NodeInventory   // sorted by name
	Teams    []TeamInventory   // sorted by team
	Jobs     []provisioner.Job // every non-terminal pod as a job, sorted by id
	GPUs     int               // allocatable GPUs on all nodes
	Used     int               // GPUs used on all nodes
	Borrowed int               // GPUs used by borrowed pods
	Free     int               // free GPUs on up nodes

	BorrowedJobs map[string]bool      // job ids of borrowed work (Mapping.Borrowed)
	Checkpoints  map[string]time.Time // job id → the workload's last checkpoint (annotation mirage.io/last-checkpoint), when set
	// Mislabelled are the pods whose team label names another team than
	// the one they are counted against (Mapping: the namespace decides).
	Mislabelled []Mislabel
}

// Mislabel is a pod whose label claims what the mapping does not give it:
// another team, or (un)borrowed work.
type Mislabel struct {
	Pod     string `json:"pod"`     // namespace/name
	Label   string `json:"label"`   // the label's key
	Claimed string `json:"claimed"` // its value
	Counted string `json:"counted"` // what the pod is counted as: its team ("" = none), or "borrowed"/"not borrowed"
}

// Team returns the inventory of one team, or nil when the team holds nothing.
func (inv *Inventory) Team(name string) *TeamInventory {
	for i := range inv.Teams {
		if inv.Teams[i].Team == name {
			return &inv.Teams[i]
		}
	}
	return nil
}

// Node returns the inventory of one node, or nil.
func (inv *Inventory) Node(name string) *NodeInventory {
	i := sort.Search(len(inv.Nodes), func(i int) bool { return inv.Nodes[i].Name >= name })
	if i < len(inv.Nodes) && inv.Nodes[i].Name == name {
		return &inv.Nodes[i]
	}
	return nil
}

// BuildInventory computes the inventory from Node and Pod objects as listed
// from the API server. Pods bound to nodes not in nodes are ignored for the
// node figures but still reported as jobs and counted for their team. An
// unbound pod that only one node may take (requiredNode: mirage's
// placement, not bound by the scheduler yet) counts on that node's GPUs,
// so that the next placement does not count them free.
func BuildInventory(now time.Time, nodes []corev1.Node, pods []corev1.Pod, m Mapping) *Inventory {
	inv := &Inventory{Time: now, Nodes: make([]NodeInventory, len(nodes))}
	for i := range nodes {
		inv.Nodes[i] = nodeInventory(&nodes[i])
	}
	sort.Slice(inv.Nodes, func(a, b int) bool { return inv.Nodes[a].Name < inv.Nodes[b].Name })
	index := make(map[string]int, len(inv.Nodes))
	for i := range inv.Nodes {
		index[inv.Nodes[i].Name] = i
	}
	teams := map[string]*TeamInventory{}
	team := func(name string) *TeamInventory {
		t := teams[name]
		if t == nil {
			t = &TeamInventory{Team: name}
			teams[name] = t
		}
		return t
	}
	inv.Jobs = make([]provisioner.Job, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		if terminal(p) {
			continue
		}
		gpus := podRequest(p, ResourceGPU)
		tm := m.Team(p)
		if l := m.label(p); l != "" && l != tm {
			inv.Mislabelled = append(inv.Mislabelled, Mislabel{Pod: p.Namespace + "/" + p.Name, Label: m.teamKey(), Claimed: l, Counted: tm})
		}
		borrowed := m.Borrowed(p)
		if l := p.Labels[LabelBorrowed]; m.BorrowedClass != "" && (l == "true") != borrowed && (l != "" || borrowed) {
			counted := "not borrowed"
			if borrowed {
				counted = "borrowed"
			}
			inv.Mislabelled = append(inv.Mislabelled, Mislabel{Pod: p.Namespace + "/" + p.Name, Label: LabelBorrowed, Claimed: l, Counted: counted})
		}
		j := podJob(p, tm, gpus)
		inv.Jobs = append(inv.Jobs, j)
		if borrowed {
			if inv.BorrowedJobs == nil {
				inv.BorrowedJobs = map[string]bool{}
			}
			inv.BorrowedJobs[j.ID] = true
		}
		if v := p.Annotations[AnnotationLastCheckpoint]; v != "" {
			// Written by the workload, so only as true as its owner: it orders
			// borrowed victims, never decides whether a reclaim happens; a
			// time still to come cannot be true and is ignored.
			if ts, err := time.Parse(time.RFC3339Nano, v); err == nil && !ts.After(now) {
				if inv.Checkpoints == nil {
					inv.Checkpoints = map[string]time.Time{}
				}
				if prev, ok := inv.Checkpoints[j.ID]; !ok || ts.Before(prev) {
					inv.Checkpoints[j.ID] = ts // a Job's pods: the oldest checkpoint is what a reclaim loses
				}
			}
		}
		node := p.Spec.NodeName
		if node == "" {
			if gpus > 0 || tm != "" {
				team(tm).Pending++
			}
			// A pod that only one node can take (mirage's placement, which the
			// scheduler has not bound yet) holds its GPUs there already.
			if node = requiredNode(p); node == "" {
				continue
			}
		} else if gpus > 0 {
			t := team(tm)
			t.Used += int(gpus)
			t.Pods++
			if borrowed {
				t.Borrowed += int(gpus)
			}
		}
		ni, ok := index[node]
		if !ok {
			continue
		}
		n := &inv.Nodes[ni]
		if gpus > 0 {
			n.Used += int(gpus)
			n.Pods++
			if borrowed {
				n.Borrowed += int(gpus)
			}
			if n.ByTeam == nil {
				n.ByTeam = map[string]int{}
			}
			n.ByTeam[tm] += int(gpus)
		}
		for name, c := range n.MIG {
			if u := podRequest(p, corev1.ResourceName(name)); u > 0 {
				c.Used += u
				n.MIG[name] = c
			}
		}
	}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		if n.State == provisioner.NodeUp && n.GPUs > n.Used {
			n.Free = n.GPUs - n.Used
		}
		inv.GPUs += n.GPUs
		inv.Used += n.Used
		inv.Borrowed += n.Borrowed
		inv.Free += n.Free
	}
	inv.Teams = make([]TeamInventory, 0, len(teams))
	for _, t := range teams {
		inv.Teams = append(inv.Teams, *t)
	}
	sort.Slice(inv.Teams, func(a, b int) bool { return inv.Teams[a].Team < inv.Teams[b].Team })
	sort.Slice(inv.Jobs, func(a, b int) bool { return inv.Jobs[a].ID < inv.Jobs[b].ID })
	return inv
}

// Capabilities are Kubernetes': it queues nothing mirage must place (a pod
// is created for the node the team rules chose, when it can run there) and
// has no job dependencies, and a pod's node cannot be lifted.
var Capabilities = provisioner.Capabilities{}

// Snapshot converts the inventory to the provisioner's view: one Node per
// node (GPUs, GPUsUsed, GPUType, Labels, State), one Job per non-terminal
// pod (with its last checkpoint), Kubernetes' Capabilities.
func (inv *Inventory) Snapshot() *provisioner.Snapshot { return inv.SnapshotAs("") }

// SnapshotAs is Snapshot with borrowed pods (BorrowedJobs) carrying
// borrowedQOS as their QOS ("" leaves their priority class): the team
// rules' borrowed QOS, the mark the rules recognise on every backend.
func (inv *Inventory) SnapshotAs(borrowedQOS string) *provisioner.Snapshot {
	s := &provisioner.Snapshot{Time: inv.Time, Nodes: make([]provisioner.Node, len(inv.Nodes)), Caps: Capabilities}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		s.Nodes[i] = provisioner.Node{
			Name:     n.Name,
			State:    n.State,
			GPUs:     n.GPUs,
			GPUsUsed: n.Used,
			GPUType:  n.GPUType,
			Labels:   n.Labels,
		}
	}
	s.Jobs = append([]provisioner.Job(nil), inv.Jobs...)
	for i := range s.Jobs {
		j := &s.Jobs[i]
		j.Checkpoint = inv.Checkpoints[j.ID]
		if borrowedQOS != "" && inv.BorrowedJobs[j.ID] {
			j.QOS = borrowedQOS
		}
	}
	return s
}

// RulesSnapshot is the inventory as the team rules see it: SnapshotAs
// their borrowed QOS.
func RulesSnapshot(inv *Inventory, rules *team.Rules) *provisioner.Snapshot {
	return inv.SnapshotAs(rules.Config().Borrowing.QOS)
}

// nodeInventory reads one node's GPUs, MIG resources and state.
func nodeInventory(n *corev1.Node) NodeInventory {
	ni := NodeInventory{
		Name:     n.Name,
		Cordoned: n.Spec.Unschedulable,
		GPUType:  n.Labels[LabelGPUProduct],
		Labels:   n.Labels,
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ni.Ready = c.Status == corev1.ConditionTrue
		}
	}
	switch {
	case !ni.Ready:
		ni.State = provisioner.NodeDown
	case ni.Cordoned:
		ni.State = provisioner.NodeDrained
	default:
		ni.State = provisioner.NodeUp
	}
	if q, ok := n.Status.Allocatable[ResourceGPU]; ok {
		ni.GPUs = int(q.Value())
	}
	for name, q := range n.Status.Allocatable {
		if strings.HasPrefix(string(name), MIGPrefix) {
			if ni.MIG == nil {
				ni.MIG = map[string]Count{}
			}
			ni.MIG[string(name)] = Count{Allocatable: q.Value()}
		}
	}
	return ni
}

// terminal reports whether a pod has finished and holds nothing.
func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podRequest is the pod's effective request of one resource, as the scheduler
// computes it: the larger of (regular containers + sidecars) and, for each
// plain init container, its request plus the sidecars started before it; plus
// the pod overhead. Limits stand in for a missing request (extended resources
// may set limits only).
func podRequest(p *corev1.Pod, name corev1.ResourceName) int64 {
	var sum, sidecars, initMax int64
	for i := range p.Spec.Containers {
		sum += containerRequest(&p.Spec.Containers[i], name)
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		r := containerRequest(c, name)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += r
			if sidecars > initMax {
				initMax = sidecars
			}
			continue
		}
		if r+sidecars > initMax {
			initMax = r + sidecars
		}
	}
	total := sum + sidecars
	if initMax > total {
		total = initMax
	}
	if q, ok := p.Spec.Overhead[name]; ok {
		total += q.Value()
	}
	return total
}

// containerRequest is one container's request of a resource (its limit if no request).
func containerRequest(c *corev1.Container, name corev1.ResourceName) int64 {
	if q, ok := c.Resources.Requests[name]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Limits[name]; ok {
		return q.Value()
	}
	return 0
}

// podJob maps a pod to a provisioner.Job. A bound pod holds its GPUs whether
// or not its containers run yet, so bound pods are RUNNING for the
// provisioner (Reason "Bound" while the pod phase is still Pending,
// "Terminating" once deletion has begun); unbound pods are PENDING.
func podJob(p *corev1.Pod, team string, gpus int64) provisioner.Job {
	j := provisioner.Job{
		ID:      PodRef(p.Namespace, p.Name).String(),
		Name:    p.Name,
		Account: team,
		QOS:     p.Spec.PriorityClassName,
		Submit:  p.CreationTimestamp.Time,
		Nodes:   1,
		GPUs:    int(gpus),
		GPUType: p.Spec.NodeSelector[LabelGPUProduct],
		Comment: p.Annotations[AnnotationComment],
	}
	if owner := jobOwner(p); owner != "" {
		j.ID = JobRef(p.Namespace, owner).String()
	}
	if p.Spec.Priority != nil {
		j.Priority = int64(*p.Spec.Priority)
	}
	if p.Spec.ActiveDeadlineSeconds != nil {
		j.TimeLimit = time.Duration(*p.Spec.ActiveDeadlineSeconds) * time.Second
	}
	if p.Status.StartTime != nil {
		j.Start = p.Status.StartTime.Time
	}
	switch {
	case p.Spec.NodeName == "":
		j.State = provisioner.StatePending
		j.Reason = "Unbound"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
				j.Reason = c.Reason
			}
		}
	default:
		j.State = provisioner.StateRunning
		j.NodeList = []string{p.Spec.NodeName}
		if p.Status.Phase != corev1.PodRunning {
			j.Reason = "Bound"
		}
		if p.DeletionTimestamp != nil {
			j.Reason = "Terminating"
		}
		if j.Start.IsZero() {
			j.Start = p.CreationTimestamp.Time
		}
	}
	return j
}

// requiredNode is the one node an unbound pod's required node affinity
// allows by name (one term, one metadata.name In requirement with one
// value: how mirage places its pods), or "".
func requiredNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || len(terms[0].MatchFields) != 1 {
		return ""
	}
	r := terms[0].MatchFields[0]
	if r.Key != "metadata.name" || r.Operator != corev1.NodeSelectorOpIn || len(r.Values) != 1 {
		return ""
	}
	return r.Values[0]
}

// jobOwner returns the name of the batch/v1 Job owning the pod, or "".
func jobOwner(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "Job" && strings.HasPrefix(o.APIVersion, "batch/") {
			return o.Name
		}
	}
	return ""
}

// gpuQuantity renders n GPUs as a resource quantity.
func gpuQuantity(n int) resource.Quantity {
	return resource.MustParse(strconv.Itoa(n))
}
