package eval

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

func packPct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// WriteText writes the report as mirage pack-eval prints it: per pod list a
// table of the policies' figures and the fragmentation curve.
func (rep *PackReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "cluster: %s — %d nodes, %.0f GPUs; mode %s", rep.Nodes, rep.NodeN, rep.GPUs, rep.Mode)
	if rep.Mode == PackFill {
		fmt.Fprintf(w, " until %.0f%% of capacity has arrived", 100*rep.Until)
		if rep.Seed != 0 {
			fmt.Fprintf(w, " (arrival order shuffled, seed %d)", rep.Seed)
		}
	}
	fmt.Fprintln(w)
	for _, pl := range rep.Lists {
		fmt.Fprintf(w, "\n%s: %d pods (%d with GPUs, %d sharing a GPU, %d with a GPU-type constraint)\n", pl.File, pl.Pods, pl.GPUPods, pl.Sharing, pl.Typed)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tFIRST-FAIL-AT\tUNALLOC-AT-FAIL\tFRAG-AT-FAIL\tFAILED\tUNALLOC-END\tFRAG-END\tMAX-ALLOC\t")
		for _, r := range pl.Results {
			at, ua, fr := "none", "-", "-"
			if f := r.FirstFailure; f != nil {
				at, ua, fr = packPct(f.Arrived), packPct(f.Unallocated), packPct(f.Fragmented)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", r.Policy, at, ua, fr, r.Failed, packPct(r.End.Unallocated), packPct(r.End.Fragmented), packPct(r.MaxAlloc))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "(shares of GPU capacity; FIRST-FAIL-AT: arrived GPU demand when placement first failed)")
		if len(pl.Results) == 0 || len(pl.Results[0].Curve) == 0 {
			continue
		}
		x := "ARRIVED"
		if rep.Mode == PackReplay {
			x = "HOURS"
		}
		fmt.Fprintf(w, "fragmented share of capacity (free GPUs the pod mix cannot use) along the run:\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, x+"\t")
		for _, r := range pl.Results {
			fmt.Fprintf(tw, "%s\t", r.Policy)
		}
		fmt.Fprintln(tw)
		n := len(pl.Results[0].Curve)
		for i := 0; i < n; i++ {
			p := pl.Results[0].Curve[i]
			if rep.Mode == PackReplay {
				fmt.Fprintf(tw, "%.0f\t", p.Time)
			} else {
				fmt.Fprintf(tw, "%s\t", packPct(p.Arrived))
			}
			for _, r := range pl.Results {
				if i < len(r.Curve) {
					fmt.Fprintf(tw, "%s\t", packPct(r.Curve[i].Fragmented))
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

// PackListName is a pod list's short name: its file name without the
// openb_pod_list_ prefix and the extension ("default", "gpushare40").
func PackListName(file string) string {
	b := filepath.Base(file)
	b = strings.TrimSuffix(b, filepath.Ext(b))
	return strings.TrimPrefix(b, "openb_pod_list_")
}

// WriteMarkdown writes the report's figures as Markdown tables, one row per
// pod list and one column per policy, the best of each row in bold (the
// lowest at the printed precision): the share of GPUs left unallocated when
// placement first failed; at the end the expected fragmented share, the
// unallocated share and the pods that could not be placed (bold: the least
// fragmented); and the fragmented share at a quarter, half, three quarters
// and all of the run.
func (rep *PackReport) WriteMarkdown(w io.Writer) error {
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
	row := func(pl *PackList, cell func(r *PackResult) string, key func(r *PackResult) string) {
		best := ""
		for i, r := range pl.Results {
			if k := key(r); i == 0 || k < best {
				best = k
			}
		}
		fmt.Fprintf(w, "| %s |", PackListName(pl.File))
		for _, r := range pl.Results {
			c := cell(r)
			if key(r) == best && len(pl.Results) > 1 {
				c = "**" + c + "**"
			}
			fmt.Fprintf(w, " %s |", c)
		}
		fmt.Fprintln(w)
	}
	// sortKey orders shares at the printed precision (0.1%) as strings.
	sortKey := func(x float64) string { return fmt.Sprintf("%08.1f", 100*x) }
	header("Share of GPUs left unallocated when placement first failed (lower is better; none: no pod ever failed):")
	for i := range rep.Lists {
		row(&rep.Lists[i], func(r *PackResult) string {
			if r.FirstFailure == nil {
				return "none"
			}
			return packPct(r.FirstFailure.Unallocated)
		}, func(r *PackResult) string {
			if r.FirstFailure == nil {
				return sortKey(-1)
			}
			return sortKey(r.FirstFailure.Unallocated)
		})
	}
	fmt.Fprintln(w)
	header("When all the demand has arrived: expected fragmented share of capacity / unallocated share / pods that could not be placed (lower is better; the least fragmented in bold):")
	for i := range rep.Lists {
		row(&rep.Lists[i], func(r *PackResult) string {
			return fmt.Sprintf("%s / %s / %d", packPct(r.End.Fragmented), packPct(r.End.Unallocated), r.Failed)
		}, func(r *PackResult) string { return sortKey(r.End.Fragmented) })
	}
	fmt.Fprintln(w)
	header("Fragmented share of capacity at ¼, ½, ¾ and all of the run (lower is better; bold: the least at the end):")
	for i := range rep.Lists {
		row(&rep.Lists[i], func(r *PackResult) string {
			var parts []string
			for q := 1; q <= 4; q++ {
				if k := q*len(r.Curve)/4 - 1; k >= 0 && k < len(r.Curve) {
					parts = append(parts, fmt.Sprintf("%.1f", 100*r.Curve[k].Fragmented))
				}
			}
			return strings.Join(parts, " / ") + " %"
		}, func(r *PackResult) string {
			if len(r.Curve) == 0 {
				return sortKey(0)
			}
			return sortKey(r.Curve[len(r.Curve)-1].Fragmented)
		})
	}
	return nil
}
