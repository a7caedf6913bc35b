package k8s

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// WriteText prints the view as two tables: the nodes (with an "all" row and
// a note on the FRAG column) and the teams, sorted by name.
func (v *InventoryView) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tGPU-TYPE\tTOTAL\tUSED\tBORROWED\tFREE\tFRAG\t")
	for _, n := range v.Nodes {
		typ := n.GPUType
		if typ == "" {
			typ = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t\n", n.Name, n.State, typ, n.Total, n.Used, n.Borrowed, n.Free, placement.FormatGPUs(n.Frag))
	}
	fmt.Fprintf(tw, "all\t\t\t%d\t%d\t%d\t%d\t%s\t\n", v.Total, v.Used, v.Borrowed, v.Free, placement.FormatGPUs(v.Frag))
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.Mix != "" {
		fmt.Fprintf(w, "(FRAG: free GPUs the expected job mix cannot use (ATC'23 measure); mix: %s)\n\n", v.Mix)
	} else {
		fmt.Fprintf(w, "(FRAG: free GPUs on nodes that cannot fit a %d-GPU job)\n\n", v.JobSize)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tQUOTA\tUSED\tBORROWED\tFREE\tPODS\tPENDING\t")
	teams := append([]TeamView(nil), v.Teams...)
	sort.Slice(teams, func(a, b int) bool { return teams[a].Team < teams[b].Team })
	for _, t := range teams {
		name := t.Team
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t\n", name, optInt(t.Quota), t.Used, t.Borrowed, optInt(t.Free), t.Pods, t.Pending)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Mislabelled) > 0 {
		fmt.Fprintf(w, "\n%d pod label(s) claim what mirage does not count (teams come from the namespace mapping, borrowed work from its priority class):\n", len(v.Mislabelled))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POD\tLABEL\tCLAIMS\tCOUNTED AS\t")
		for _, m := range v.Mislabelled {
			fmt.Fprintf(tw, "%s\t%s\t%q\t%s\t\n", m.Pod, m.Label, m.Claimed, cmp.Or(m.Counted, "(no team)"))
		}
		return tw.Flush()
	}
	return nil
}

func optInt(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// TeamNames lists the named teams holding GPUs, comma-separated, or "none".
func (inv *Inventory) TeamNames() string {
	var names []string
	for _, t := range inv.Teams {
		if t.Team != "" {
			names = append(names, t.Team)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
