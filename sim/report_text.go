package sim

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
)

// WriteText prints the fidelity comparison: the jobs left out and one table
// row per group (errors and percentiles as durations rounded to seconds).
func (rep *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "excluded from comparison: %v\n", rep.Excluded)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tjobs\tmedian|err|\tp90|err|\tpearson\tKS\tsim p50\trec p50\tsim p90\trec p90\t")
	for _, s := range rep.Stats {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t\n", s.Group, s.Jobs, dur(s.MedianAbsErr), dur(s.P90AbsErr), s.Pearson, s.KS, dur(s.SimMedian), dur(s.RecMedian), dur(s.SimP90), dur(s.RecP90))
	}
	return tw.Flush()
}

func dur(sec float64) string {
	return (time.Duration(sec) * time.Second).Round(time.Second).String()
}

// Replay is what `mirage sim` prints of a fidelity replay (its JSON with
// --json): the cluster, the wall-clock time, and the fidelity report or
// the per-job results when they were asked for.
type Replay struct {
	Trace    string   `json:"trace"`
	Preset   string   `json:"preset"`
	Nodes    int      `json:"nodes"`
	Seed     uint64   `json:"seed"`
	WallSec  float64  `json:"wall_s"`
	Report   *Report  `json:"report,omitempty"` // the comparison, when asked for
	Jobs     []Result `json:"jobs,omitempty"`
	Replayed int      `json:"replayed"`

	Fidelity *Report `json:"-"` // always set: the header line's counts
	JobsFile bool    `json:"-"` // the per-job results went to a file: WriteText omits them
}

// WriteText prints a line of counts, then the fidelity report if asked for,
// else the per-job results as CSV unless they went to a file.
func (r *Replay) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "replayed %d jobs (%d skipped) over %.1f simulated days on %d nodes in %.2f s\n", r.Fidelity.Jobs, r.Fidelity.Skipped, r.Fidelity.SimDays, r.Nodes, r.WallSec)
	switch {
	case r.Report != nil:
		return r.Report.WriteText(w)
	case r.JobsFile:
		return nil
	}
	return WriteResultsCSV(w, r.Jobs)
}

// WriteResultsCSV writes per-job results as CSV: id, submit, start, end
// (RFC 3339, empty when zero), state and nodes.
func WriteResultsCSV(w io.Writer, res []Result) error {
	fmt.Fprintln(w, "id,submit,start,end,state,nodes")
	for _, r := range res {
		fmt.Fprintf(w, "%s,%s,%s,%s,%s,%d\n", r.ID, r.Submit.Format(time.RFC3339), csvTime(r.Start), csvTime(r.End), r.State, r.Nodes)
	}
	return nil
}

func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// WriteResultsFile writes WriteResultsCSV to path atomically, through a
// fresh temporary file beside it (safefile: no planted link is followed).
func WriteResultsFile(path string, res []Result) error {
	return safefile.WriteFile(path, 0o644, func(w io.Writer) error { return WriteResultsCSV(w, res) })
}
