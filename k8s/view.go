package k8s

import (
	"math"

	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// ViewOptions choose what Inventory.View shows.
type ViewOptions struct {
	// JobSize is the reference job size in GPUs of the FRAG column; 0 means
	// the team rules' job-size mix when Rules is set, else the most common
	// GPU request among running pods.
	JobSize int
	// Team restricts the view to one team's row and the nodes it uses ("" = all).
	Team string
	// Rules supply the quotas and the job-size mix (nil = none).
	Rules *team.Rules
	// Quota supplies a team's nominal GPUs when Rules is nil (nil, or
	// ok=false: unknown).
	Quota func(team string) (gpus int, ok bool)
}

// InventoryView is the inventory as "mirage k8s inventory" shows it: per
// node and per team, with each node's fragmentation (FRAG: the free GPUs the
// job-size mix cannot use, the ATC'23 measure, rounded to 0.1 GPU) and each
// team's quota and free quota where known.
type InventoryView struct {
	Time     string     `json:"time"`
	JobSize  int        `json:"job_size"`
	Nodes    []NodeView `json:"nodes"`
	Teams    []TeamView `json:"teams"`
	Total    int        `json:"total"`
	Used     int        `json:"used"`
	Borrowed int        `json:"borrowed"`
	Free     int        `json:"free"`
	Frag     float64    `json:"fragmented"`
	Mix      string     `json:"mix,omitempty"` // the learned job-size mix, when FRAG is measured under it
	// Mislabelled are pods whose labels claim a team or borrowed status
	// mirage does not count them as (Inventory.Mislabelled).
	Mislabelled []Mislabel `json:"mislabelled,omitempty"`
}

// NodeView is one node's row.
type NodeView struct {
	Name     string             `json:"name"`
	State    string             `json:"state"`
	GPUType  string             `json:"gpu_type,omitempty"`
	Total    int                `json:"total"`
	Used     int                `json:"used"`
	Borrowed int                `json:"borrowed"`
	Free     int                `json:"free"`
	Frag     float64            `json:"fragmented"`
	ByTeam   map[string]int     `json:"by_team,omitempty"`
	MIG      map[string]MIGView `json:"mig,omitempty"`
}

// MIGView is one MIG resource of a node.
type MIGView struct {
	Allocatable int64 `json:"allocatable"`
	Used        int64 `json:"used"`
}

// TeamView is one team's row; Quota and Free are nil when no quota is known.
type TeamView struct {
	Team     string `json:"team"`
	Quota    *int   `json:"quota,omitempty"`
	Used     int    `json:"used"`
	Borrowed int    `json:"borrowed"`
	Free     *int   `json:"free,omitempty"`
	Pods     int    `json:"pods"`
	Pending  int    `json:"pending"`
}

// View computes the figures of the inventory view. Without a learned mix,
// FRAG is measured under one job of the reference size
// (placement.SizeMix): the free GPUs of nodes that cannot fit such a job.
// A team's free quota is its quota less its own (not borrowed) GPUs.
func (inv *Inventory) View(o ViewOptions) *InventoryView {
	size := o.JobSize
	if size == 0 {
		size = placement.CommonJobSize(inv.Jobs)
	}
	v := &InventoryView{Time: inv.Time.UTC().Format("2006-01-02T15:04:05Z"), JobSize: size,
		Nodes: []NodeView{}, Teams: []TeamView{}, Mislabelled: inv.Mislabelled}
	mix := placement.SizeMix(size)
	quota := o.Quota
	if o.Rules != nil {
		if o.JobSize == 0 {
			mix = o.Rules.Mix(RulesSnapshot(inv, o.Rules), inv.Time)
			v.Mix = mix.String()
		}
		cfg := o.Rules.Config()
		quota = func(team string) (int, bool) {
			if q := cfg.Team(team); q != nil {
				return q.GPUs, true
			}
			return 0, false
		}
	}
	frag := placement.FragmentationByNode(inv.Snapshot(), mix)
	for _, n := range inv.Nodes {
		if o.Team != "" && n.ByTeam[o.Team] == 0 {
			continue
		}
		nv := NodeView{Name: n.Name, State: string(n.State), GPUType: n.GPUType, Total: n.GPUs, Used: n.Used,
			Borrowed: n.Borrowed, Free: n.Free, Frag: math.Round(frag[n.Name]*10) / 10, ByTeam: n.ByTeam}
		for name, c := range n.MIG {
			if nv.MIG == nil {
				nv.MIG = map[string]MIGView{}
			}
			nv.MIG[name] = MIGView(c)
		}
		v.Nodes = append(v.Nodes, nv)
		v.Total += n.GPUs
		v.Used += n.Used
		v.Borrowed += n.Borrowed
		v.Free += n.Free
		v.Frag += nv.Frag
	}
	for _, t := range inv.Teams {
		if o.Team != "" && t.Team != o.Team {
			continue
		}
		tv := TeamView{Team: t.Team, Used: t.Used, Borrowed: t.Borrowed, Pods: t.Pods, Pending: t.Pending}
		if quota != nil {
			if gpus, ok := quota(t.Team); ok {
				q := team.Quota{Name: t.Team, GPUs: gpus}
				free := q.Free(t.Used - t.Borrowed)
				tv.Quota, tv.Free = &gpus, &free
			}
		}
		v.Teams = append(v.Teams, tv)
	}
	return v
}
