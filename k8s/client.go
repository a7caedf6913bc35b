package k8s

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mirage-gpu/mirage/internal/wallclock"
	"github.com/mirage-gpu/mirage/provisioner"
)

// DeployMode says what Submit creates.
type DeployMode string

// Deploy modes.
const (
	ModePod DeployMode = "pod" // a bare Pod with spec.nodeName set (no scheduler or controller needed)
	ModeJob DeployMode = "job" // a batch/v1 Job whose pod template requires the node (needs the Job controller)
)

// Config configures the adapter. The zero value works: pods in namespace
// "default", teams from the label mirage.io/team, any team accepted.
type Config struct {
	Mapping                                 // how pods are attributed to teams
	Teams                 []string          // known teams; when non-empty, others are ErrUnknownTeam
	TeamNamespaces        map[string]string // team → namespace for submitted work (else the mapped namespace, else Namespace)
	Namespace             string            // namespace for submitted work of unmapped teams (default "default")
	Mode                  DeployMode        // what Submit creates (default ModePod)
	Image                 string            // container image of submitted work (default "busybox:1.36")
	PriorityClass         string            // priority class of work within quota (default "mirage-quota"; "-" for none)
	BorrowedPriorityClass string            // priority class of borrowed work (default "mirage-borrowed"; "-" for none)
	BorrowedQOS           string            // SubmitRequest.QOS that marks borrowed work (default "preemptible")
	CheckpointHook        string            // optional URL; Signal POSTs a JSON notice to it
	CancelGrace           *time.Duration    // grace period for Cancel (nil = the pod's own terminationGracePeriodSeconds)
	NodeSelector          string            // label selector restricting the inventory's nodes ("" = all)
	Namespaces            []string          // namespaces whose pods the inventory lists (nil = all)
	Clock                 provisioner.Timer // time source (default the wall clock)
	PollInterval          time.Duration     // how often Evict checks whether the pod is gone (default 200 ms)
	HTTPClient            *http.Client      // client for CheckpointHook (default: 10 s timeout)
	// Binding is how a pod reaches its node (default BindAffinity: the
	// scheduler binds it, held to the node by a required node affinity).
	Binding Binding
	// PodAnnotations are added to every pod mirage creates (e.g. a
	// service mesh's, or KWOK's stage delays in the test control plane).
	PodAnnotations map[string]string
	Log            *slog.Logger // warnings about pods (default slog.Default())
}

// Binding says how a pod mirage creates reaches the node the team rules
// chose.
type Binding string

// Bindings.
const (
	// BindAffinity: the pod requires its node through a node affinity on
	// metadata.name; the cluster's scheduler binds it there (and checks
	// that it fits: a pod that does not stays Pending, Unschedulable).
	// The route the VDK proposal takes; it needs a scheduler.
	BindAffinity Binding = "affinity"
	// BindNodeName: the pod is created with spec.nodeName set, bound by
	// mirage without any scheduler (a cluster with no kube-scheduler, or
	// one whose scheduler must not see mirage's work).
	BindNodeName Binding = "node-name"
)

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if c.Mode == "" {
		c.Mode = ModePod
	}
	if c.Image == "" {
		c.Image = "busybox:1.36"
	}
	if c.PriorityClass == "" {
		c.PriorityClass = "mirage-quota"
	}
	if c.BorrowedPriorityClass == "" {
		c.BorrowedPriorityClass = "mirage-borrowed"
	}
	if c.BorrowedQOS == "" {
		c.BorrowedQOS = "preemptible"
	}
	if c.Clock == nil {
		c.Clock = wallclock.Clock{}
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 200 * time.Millisecond
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if c.Binding == "" {
		c.Binding = BindAffinity
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Client talks to one Kubernetes API server. It implements provisioner.Cluster.
type Client struct {
	cs         kubernetes.Interface
	cfg        Config
	host       string // API server URL, for messages
	kubeconfig string // kubeconfig path, for messages
	authInfo   string // kubeconfig user name, for messages

	mu     sync.Mutex
	warned map[string]bool // mislabelled pods already logged, by pod and label
}

var (
	_ provisioner.Cluster       = (*Client)(nil)
	_ provisioner.HistorySource = (*Client)(nil)
	_ provisioner.Evictor       = (*Client)(nil)
	_ provisioner.ClusterNamer  = (*Client)(nil)
)

// DefaultKubeconfig is $KUBECONFIG (its first entry), else ~/.kube/config.
func DefaultKubeconfig() string {
	if v := os.Getenv("KUBECONFIG"); v != "" {
		return filepath.SplitList(v)[0]
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".kube", "config")
	}
	return ""
}

// NewFromKubeconfig builds a client from a kubeconfig file (its current
// context). An empty path is $KUBECONFIG; without it, inside a pod (the
// controller's Deployment), the pod's service account; else
// ~/.kube/config.
func NewFromKubeconfig(path string, cfg Config) (*Client, error) {
	if path == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("k8s: in-cluster configuration: %w", err)
		}
		c, err := New(rc, cfg)
		if err == nil {
			c.kubeconfig = "(in-cluster service account)"
		}
		return c, err
	}
	path = cmp.Or(path, DefaultKubeconfig())
	if path == "" {
		return nil, fmt.Errorf("k8s: no kubeconfig given (use --kubeconfig or KUBECONFIG)")
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("k8s: kubeconfig %s: %w", path, err)
	}
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("k8s: kubeconfig %s: %w", path, err)
	}
	c, err := New(rc, cfg)
	if err != nil {
		return nil, err
	}
	c.kubeconfig = path
	if ctx, ok := raw.Contexts[raw.CurrentContext]; ok {
		c.authInfo = ctx.AuthInfo
	}
	return c, nil
}

// New builds a client from a REST config.
func New(rc *rest.Config, cfg Config) (*Client, error) {
	rc = rest.CopyConfig(rc)
	if rc.Timeout == 0 {
		rc.Timeout = 30 * time.Second
	}
	rc.UserAgent = "mirage"
	if rc.QPS == 0 && rc.Burst == 0 {
		// client-go's default (5/s, bursts of 10) would space out the
		// requests of a cycle's reclaims (signal, eviction, event per
		// victim, all at once) by seconds.
		rc.QPS, rc.Burst = 50, 100
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("k8s: client for %s: %w", rc.Host, err)
	}
	c := NewForClientset(cs, cfg)
	c.host = rc.Host
	return c, nil
}

// NewForClientset wraps an existing clientset (tests use client-go's fake).
func NewForClientset(cs kubernetes.Interface, cfg Config) *Client {
	return &Client{cs: cs, cfg: cfg.withDefaults(), host: "(in-memory)", kubeconfig: "(none)"}
}

// Clientset exposes the underlying clientset.
func (c *Client) Clientset() kubernetes.Interface { return c.cs }

// Watched are the namespaces whose pods the client reads (Config.Namespaces;
// one "" = all) and the label selector of its nodes: what a controller
// watches to know when to run a cycle.
func (c *Client) Watched() (namespaces []string, nodeSelector string) {
	namespaces = c.cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	return namespaces, c.cfg.NodeSelector
}

// Config returns the effective configuration (defaults filled in).
func (c *Client) Config() Config { return c.cfg }

func (c *Client) server() string { return c.host }

func (c *Client) kubeconfigName() string { return c.kubeconfig }

// ClusterName implements provisioner.ClusterNamer: "kubernetes", so that
// a chain registered on Kubernetes is never acted on through a Slurm
// view sharing the state directory, nor a Slurm chain here (on
// Kubernetes its jobs would all look lost). It names the backend, not the
// API server's address: the controller inside the cluster reaches it by
// another address than a login node's kubeconfig does.
func (c *Client) ClusterName() string { return "kubernetes" }

func (c *Client) user() string {
	if c.authInfo == "" {
		return "(this client)"
	}
	return c.authInfo
}

// CheckTeam returns nil when team is acceptable: any non-empty team when no
// teams are configured, else one of Config.Teams.
func (c *Client) CheckTeam(team string) error {
	if team == "" {
		return fmt.Errorf("k8s: %w: no team given", ErrUnknownTeam)
	}
	if len(c.cfg.Teams) == 0 || slices.Contains(c.cfg.Teams, team) {
		return nil
	}
	known := slices.Clone(c.cfg.Teams)
	sort.Strings(known)
	return fmt.Errorf("k8s: %w %q (known teams: %v)", ErrUnknownTeam, team, known)
}

// TeamNamespace is the namespace work of a team is deployed to: the explicit
// TeamNamespaces entry, else the (alphabetically first) namespace mapped to the
// team, else Config.Namespace.
func (c *Client) TeamNamespace(team string) string {
	if ns, ok := c.cfg.TeamNamespaces[team]; ok {
		return ns
	}
	best := ""
	for ns, t := range c.cfg.NamespaceTeams {
		if t == team && (best == "" || ns < best) {
			best = ns
		}
	}
	if best != "" {
		return best
	}
	return c.cfg.Namespace
}

// mapping is the configured Mapping with the borrowed priority class: the
// class mirage gives borrowed work marks it (none with "-": the label does).
func (c *Client) mapping() Mapping {
	m := c.cfg.Mapping
	if pc := c.cfg.BorrowedPriorityClass; pc != "-" {
		m.BorrowedClass = pc
	}
	return m
}

// Inventory lists nodes and non-terminal pods and builds the inventory.
func (c *Client) Inventory(ctx context.Context) (*Inventory, error) {
	now := c.cfg.Clock.Now()
	nodes, err := c.listNodes(ctx)
	if err != nil {
		return nil, err
	}
	pods, err := c.listPods(ctx)
	if err != nil {
		return nil, err
	}
	return BuildInventory(now, nodes, pods, c.mapping()), nil
}

// Snapshot implements provisioner.Cluster: the inventory as nodes and
// jobs, borrowed pods carrying Config.BorrowedQOS (the team rules' mark
// of borrowed work), with Kubernetes' Capabilities and the reclaims the
// cluster remembers (mirage's reclaim events). Pods whose team or
// borrowed label claims what the mapping does not give them are logged,
// once per pod and label.
func (c *Client) Snapshot(ctx context.Context) (*provisioner.Snapshot, error) {
	inv, err := c.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	c.warnMislabelled(inv.Mislabelled)
	s := inv.SnapshotAs(c.cfg.BorrowedQOS)
	if s.Reclaimed, err = c.reclaimed(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// maxWarned bounds the pods remembered as already logged.
const maxWarned = 4096

// warnMislabelled logs each mislabelled pod once per pod and label.
func (c *Client) warnMislabelled(ms []Mislabel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ml := range ms {
		key := ml.Pod + " " + ml.Label
		if c.warned[key] {
			continue
		}
		if c.warned == nil || len(c.warned) >= maxWarned { // bounded: tenants choose how many pods there are
			c.warned = map[string]bool{}
		}
		c.warned[key] = true
		c.cfg.Log.Warn("k8s: a pod's label claims what mirage does not count it as (teams come from the namespace mapping, borrowed work from its priority class); logged once per pod",
			"pod", ml.Pod, "label", ml.Label, "value", ml.Claimed, "counted", ml.Counted)
	}
}

// pageSize bounds each list call; large clusters are listed in pages.
const pageSize = 500

func (c *Client) listNodes(ctx context.Context) ([]corev1.Node, error) {
	var out []corev1.Node
	opts := metav1.ListOptions{LabelSelector: c.cfg.NodeSelector, Limit: pageSize}
	for {
		l, err := c.cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, c.classify(op{"list", "nodes", ""}, err)
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

func (c *Client) listPods(ctx context.Context) ([]corev1.Pod, error) {
	namespaces := c.cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []corev1.Pod
	for _, ns := range namespaces {
		opts := metav1.ListOptions{
			FieldSelector: "status.phase!=Succeeded,status.phase!=Failed",
			Limit:         pageSize,
		}
		for {
			l, err := c.cs.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return nil, c.classify(op{"list", "pods", ns}, err)
			}
			out = append(out, l.Items...)
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
	}
	return out, nil
}
