package report

import (
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// introduction is the report's first paragraph, in plain words (no
// protocol names): what was replayed, which test jobs were started in it,
// what the gap is and which way is better. The numbers come from the
// cells' parameters and the evaluation window; what a report does not
// record is left out.
func (r *Report) introduction() string {
	var b strings.Builder
	b.WriteString("This report compares policies that decide when to submit the next job of a chain of time-limited jobs, so that it starts as the one before it ends. ")
	var traces []string
	for _, t := range r.Provenance.Traces {
		traces = append(traces, filepath.Base(t.Path))
	}
	what := "a trace's jobs"
	if len(traces) > 0 {
		what = "the jobs of " + strings.Join(traces, ", ")
	}
	fmt.Fprintf(&b, "A simulator of the cluster replayed %s", what)
	for _, w := range r.Provenance.Windows {
		if w.Name == "eval" {
			fmt.Fprintf(&b, " and, from %s to %s,", w.From.Format("2006-01-02"), w.Until.Format("2006-01-02"))
		}
	}
	var c *metrics.CellInfo
	if len(r.Provenance.Cells) > 0 {
		c = &r.Provenance.Cells[0]
	}
	b.WriteString(" started test jobs in it")
	if c != nil {
		if every := plainDuration(c.Params["interval"]); every != "" {
			fmt.Fprintf(&b, ", one every %s", every)
		}
		if nodes := c.Params["nodes"]; nodes != "" {
			fmt.Fprintf(&b, " of %s nodes", strings.ReplaceAll(nodes, ",", " or "))
		}
		parts := "two parts, a job and its follow-up"
		if k, ok := metrics.ParseChainProtocol(c.Protocol); ok {
			parts = strconv.Itoa(k) + " parts, each followed by the next"
		} else if c.Protocol == metrics.ProtocolRun {
			parts = "as many parts as the work takes"
		}
		fmt.Fprintf(&b, ", in %s", parts)
		if limit := plainDuration(c.Params["limit"]); limit != "" {
			fmt.Fprintf(&b, ", each part running its whole %s limit", limit)
		}
	}
	b.WriteString(". Each policy decided when to submit each follow-up")
	if c != nil {
		if cycle := plainDuration(c.Params["cycle"]); cycle != "" {
			fmt.Fprintf(&b, " (looking every %s at the cluster as it was then; the oracle alone also knew what would follow)", cycle)
		}
	}
	b.WriteString(". The gap is when the follow-up started less when the job before it ended: above zero the work stood still (an interruption), below zero both held their GPUs at once (an overlap). The smaller the gap either way, the better; the verdict names the policy to run.")
	return b.String()
}

// plainDuration writes a Go duration ("4h0m0s") in words ("4 h", "10 min",
// "1 h 30 min"); "" when it does not parse.
func plainDuration(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return ""
	}
	var parts []string
	if h := d / time.Hour; h > 0 {
		parts = append(parts, fmt.Sprintf("%d h", h))
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		parts = append(parts, fmt.Sprintf("%d min", m))
		d -= m * time.Minute
	}
	if s := d / time.Second; s > 0 {
		parts = append(parts, fmt.Sprintf("%d s", s))
	}
	return strings.Join(parts, " ")
}

// definitions is the report's second paragraph: the figures' exact
// definitions, with the zero tolerance the report counts with.
func (r *Report) definitions() string {
	zero := "gap ≤ 0"
	if tol := r.ZeroTolerance(); tol > 0 {
		zero = "gap ≤ " + tol.String() + ", the simulated scheduler's latency"
	}
	return "Gap = successor start − predecessor end, per hand-off. Interruption = max(gap, 0) and overlap = max(−gap, 0), averaged over all hand-offs (zeros included); " +
		"wasted GPU-hours = Σ overlap × GPUs; zero interruption = the share of hand-offs with " + zero + ". " +
		"Load class by the reactive policy's gap on the same hand-off (low ≤ 2 h, medium 2–12 h, heavy > 12 h). Reduction = 1 − Σ interruption / Σ reactive interruption over the same hand-offs."
}
