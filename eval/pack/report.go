package pack

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

func packPct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// packPM prints a share over the seeds: "4.52 ± 0.08%", or "4.52%" for one run.
func packPM(s Stat) string {
	if s.N == 0 {
		return "-"
	}
	if s.N == 1 {
		return fmt.Sprintf("%.2f%%", 100*s.Mean)
	}
	return fmt.Sprintf("%.2f ± %.2f%%", 100*s.Mean, 100*s.SD)
}

// packCount prints a count over the seeds: "255 ± 12", or "255" for one run.
func packCount(s Stat) string {
	if s.N == 0 {
		return "-"
	}
	if s.N == 1 {
		return fmt.Sprintf("%.0f", s.Mean)
	}
	return fmt.Sprintf("%.0f ± %.0f", s.Mean, s.SD)
}

// Methodology describes how the report's replays arrive, in one sentence.
func (rep *Report) Methodology() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode %s", rep.Mode)
	if rep.Mode == Fill {
		fmt.Fprintf(&b, " until %.0f%% of capacity has arrived", 100*rep.Until)
		if len(rep.Seeds) > 0 {
			fmt.Fprintf(&b, "; arrivals: the pod list shuffled, then pods drawn from it with replacement up to %.0f%% of capacity, seeds %d–%d (%d)",
				100*rep.Inflate, rep.Seeds[0], rep.Seeds[len(rep.Seeds)-1], len(rep.Seeds))
		} else {
			b.WriteString("; arrivals in trace order, the list cycled")
		}
	}
	fmt.Fprintf(&b, "; frag-aware's mix: ")
	if rep.Mix == "recent" {
		b.WriteString("learned from the last 1,000 arrivals")
	} else {
		b.WriteString("the pod list's")
	}
	if rep.MultiGPU > 0 {
		fmt.Fprintf(&b, "; single-GPU pods re-drawn as 2-, 4- and 8-GPU pods until those carry %.0f%% of the GPU demand (MultiGPU, drawn per seed)", 100*rep.MultiGPU)
	}
	if rep.Types > 0 {
		fmt.Fprintf(&b, "; %.0f%% of the GPU pods given a GPU-type constraint (ConstrainTypes, drawn per seed)", 100*rep.Types)
	}
	return b.String()
}

// WriteText writes the report as mirage pack-eval prints it: per pod list a
// table of the policies' figures over the seeds and the mean fragmentation
// curve.
func (rep *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "cluster: %s — %d nodes, %.0f GPUs; %s\n", rep.Nodes, rep.NodeN, rep.GPUs, rep.Methodology())
	for _, pl := range rep.Lists {
		fmt.Fprintf(w, "\n%s: %d pods (%d with GPUs, %d sharing a GPU, %d with a GPU-type constraint", pl.File, pl.Pods, pl.GPUPods, pl.Sharing, pl.Typed)
		if rep.MultiGPU > 0 {
			fmt.Fprintf(w, ", %d with 2 or more GPUs: %.1f%% of the GPU demand", pl.Multi, 100*pl.MultiGPU)
		}
		fmt.Fprintln(w, ")")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tUNALLOC@100%\tFAILED@100%\tFRAG@100%\tFIRST-FAIL-AT\tUNALLOC-AT-FAIL\t")
		for _, s := range pl.Summary {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Policy, packPM(s.Unalloc100), packCount(s.Failed100), packPM(s.Frag100),
				packPM(s.FirstFail), packPM(s.FailUnalloc))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "(shares of GPU capacity, mean ± sd over the seeds; @100%: when the arrived GPU demand reached the capacity —")
		fmt.Fprintln(w, " UNALLOC the mean over arrivals at 99.5–100.5%, as ATC'23; FIRST-FAIL-AT: arrived GPU demand when placement first failed)")
		if len(pl.Summary) == 0 || len(pl.Summary[0].Curve) == 0 {
			continue
		}
		x := "ARRIVED"
		if rep.Mode == Replay {
			x = "HOURS"
		}
		fmt.Fprintf(w, "fragmented share of capacity (free GPUs the pod mix cannot use) along the run, mean over the seeds:\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, x+"\t")
		for _, s := range pl.Summary {
			fmt.Fprintf(tw, "%s\t", s.Policy)
		}
		fmt.Fprintln(tw)
		for i, p := range pl.Summary[0].Curve {
			if rep.Mode == Replay {
				fmt.Fprintf(tw, "%.0f\t", p.Time)
			} else {
				fmt.Fprintf(tw, "%s\t", packPct(p.Arrived))
			}
			for _, s := range pl.Summary {
				if i < len(s.Curve) {
					fmt.Fprintf(tw, "%s\t", packPct(s.Curve[i].Fragmented))
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// ListName is a pod list's short name: its file name without the
// openb_pod_list_ prefix and the extension ("default", "gpushare40").
func ListName(file string) string {
	b := filepath.Base(file)
	b = strings.TrimSuffix(b, filepath.Ext(b))
	return strings.TrimPrefix(b, "openb_pod_list_")
}

// WriteMarkdown writes the report's figures as Markdown tables, one row per
// pod list and one column per policy, the best of each row in bold (the
// lowest mean at the printed precision): the unallocated share at 100%
// arrival, the pods that could not be placed by then, the arrived and the
// unallocated share at the first failure, and the fragmented share at a
// quarter, half, three quarters and all of the run. name gives a list's
// row label (nil: ListName of its file).
func (rep *Report) WriteMarkdown(w io.Writer, name func(*List) string) error {
	if name == nil {
		name = func(pl *List) string { return ListName(pl.File) }
	}
	header := func(title string) {
		fmt.Fprintf(w, "%s\n\n| pod list |", title)
		for _, p := range rep.Policies {
			fmt.Fprintf(w, " %s |", p)
		}
		fmt.Fprint(w, "\n|---|")
		for range rep.Policies {
			fmt.Fprint(w, "---|")
		}
		fmt.Fprintln(w)
	}
	// row prints one pod list's cells, bold where key is the row's lowest.
	row := func(pl *List, cell func(s *Summary) string, key func(s *Summary) string) {
		best := ""
		for i := range pl.Summary {
			if k := key(&pl.Summary[i]); i == 0 || k < best {
				best = k
			}
		}
		fmt.Fprintf(w, "| %s |", name(pl))
		for i := range pl.Summary {
			c := cell(&pl.Summary[i])
			if key(&pl.Summary[i]) == best && len(pl.Summary) > 1 {
				c = "**" + c + "**"
			}
			fmt.Fprintf(w, " %s |", c)
		}
		fmt.Fprintln(w)
	}
	// sortKey orders shares at the printed precision (0.01%) as strings.
	sortKey := func(x float64) string { return fmt.Sprintf("%010.2f", 100*x) }
	header("Unallocated share of GPU capacity when the arrived GPU demand reached 100% of it (mean ± sd over the seeds; lower is better):")
	for i := range rep.Lists {
		row(&rep.Lists[i], func(s *Summary) string { return packPM(s.Unalloc100) },
			func(s *Summary) string { return sortKey(s.Unalloc100.Mean) })
	}
	fmt.Fprintln(w)
	header("Pods that could not be placed by then (mean ± sd; lower is better):")
	for i := range rep.Lists {
		row(&rep.Lists[i], func(s *Summary) string { return packCount(s.Failed100) },
			func(s *Summary) string { return fmt.Sprintf("%012.1f", s.Failed100.Mean) })
	}
	fmt.Fprintln(w)
	header("First failure: arrived GPU demand / unallocated share when placement first failed (means; none: no run failed; one event per run, a noisy figure; bold: the latest):")
	for i := range rep.Lists {
		row(&rep.Lists[i], func(s *Summary) string {
			if s.FirstFail.N == 0 {
				return "none"
			}
			return fmt.Sprintf("%s / %s", packPct(s.FirstFail.Mean), packPct(s.FailUnalloc.Mean))
		}, func(s *Summary) string {
			if s.FirstFail.N == 0 {
				return sortKey(-1)
			}
			return sortKey(1000 - s.FirstFail.Mean)
		})
	}
	fmt.Fprintln(w)
	header("Fragmented share of capacity at ¼, ½, ¾ and all of the run (means; lower is better; bold: the least at the end):")
	for i := range rep.Lists {
		row(&rep.Lists[i], func(s *Summary) string {
			var parts []string
			for q := 1; q <= 4; q++ {
				if k := q*len(s.Curve)/4 - 1; k >= 0 && k < len(s.Curve) {
					parts = append(parts, fmt.Sprintf("%.1f", 100*s.Curve[k].Fragmented))
				}
			}
			return strings.Join(parts, " / ") + " %"
		}, func(s *Summary) string {
			if len(s.Curve) == 0 {
				return sortKey(0)
			}
			return sortKey(s.Curve[len(s.Curve)-1].Fragmented)
		})
	}
	return nil
}

// SummaryOf returns a pod list's summary for a policy (nil: not run).
func (pl *List) SummaryOf(p placement.Policy) *Summary {
	for i := range pl.Summary {
		if pl.Summary[i].Policy == p {
			return &pl.Summary[i]
		}
	}
	return nil
}
