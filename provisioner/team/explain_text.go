package team

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// WriteText prints the explanation for humans: the verdict and its reason,
// the team's use, the chosen nodes, the submission hints, the candidates
// and rejected nodes (tables), and the reclaim plan.
func (v *Explanation) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "job:      %s for team %s (dry run: nothing submitted)\n", v.Demand, v.Team)
	fmt.Fprintf(w, "cluster:  %s\n", v.Source)
	fmt.Fprintf(w, "verdict:  %s\n", v.Verdict)
	fmt.Fprintf(w, "why:      %s\n", v.Reason)
	if u := v.Usage; u != nil {
		fmt.Fprintf(w, "usage:    %d of %d GPUs within quota, %d borrowed\n", u.Used, u.Quota, u.Borrowed)
	}
	if len(v.Nodes) > 0 {
		fmt.Fprintf(w, "nodes:    %s (%s)\n", strings.Join(v.Nodes, ","), v.Policy)
	}
	var hints []string
	if v.QOS != "" {
		hints = append(hints, "QOS "+v.QOS)
	}
	if len(v.NodeList) > 0 {
		hints = append(hints, "node list "+strings.Join(v.NodeList, ","))
	}
	if len(v.Exclude) > 0 {
		hints = append(hints, "exclude "+strings.Join(v.Exclude, ","))
	}
	if len(hints) > 0 {
		fmt.Fprintf(w, "submit:   %s\n", strings.Join(hints, "; "))
	}
	fmt.Fprintf(w, "mix:      %s\n", v.Mix)
	if len(v.Ranked) > 0 {
		fmt.Fprintln(w, "\ncandidates (best first):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tSCORE\tNORM\tFRAG-DELTA\tFREE-AFTER\t")
		for _, c := range v.Ranked {
			fmt.Fprintf(tw, "%s\t%.3f\t%.2f\t%+.2f\t%s\t\n", c.Node, c.Score, c.Norm, c.FragDelta, placement.FormatGPUs(c.FreeAfter))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(v.Rejected) > 0 {
		fmt.Fprintln(w, "\nrejected:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if len(v.RejectedN) > 0 {
			for _, r := range v.RejectedN {
				fmt.Fprintf(tw, "%s\t%s\t\n", r.Node, r.Reason)
			}
		} else {
			for _, r := range slices.Sorted(maps.Keys(v.Rejected)) {
				fmt.Fprintf(tw, "%d nodes\t%s\t\n", v.Rejected[r], r)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if p := v.Reclaim; p != nil {
		fmt.Fprintf(w, "\nreclaim plan: %s\n", p.Reason)
		for i, s := range p.Steps {
			switch s.Kind {
			case StepSignal:
				fmt.Fprintf(w, "  %d. signal %s %s (checkpoint)\n", i+1, s.JobID, s.Signal)
			case StepWait:
				fmt.Fprintf(w, "  %d. wait %s (grace period)\n", i+1, s.Grace)
			case StepEvict:
				fmt.Fprintf(w, "  %d. evict %s — %s\n", i+1, s.JobID, s.Reason)
			case StepPlace:
				fmt.Fprintf(w, "  %d. place on %s\n", i+1, s.Node)
			}
		}
	}
	return nil
}
