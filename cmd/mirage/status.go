package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

// statusOptions are the flags of mirage status.
type statusOptions struct {
	f      *Factory
	chain  string
	json   bool
	active bool
	state  stateOptions
}

func newStatusCmd(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status [CHAIN]",
		Short: "Show chains, or one chain's segments with the gaps between them",
		Long: `Without CHAIN, one line per chain: its policy, state, current segment and job,
the last gap between segments (positive: interruption; negative: overlap) and,
for ended chains, the reason. With CHAIN, its segments: job, state, submit,
start and end times and the gap to the predecessor. Reads the state database
only (what the last daemon cycle saw).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.chain = args[0]
			}
			if runF != nil {
				return runF(o)
			}
			return statusRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&o.active, "active", false, "only active chains")
	o.state.add(cmd)
	return cmd
}

// segmentJSON is one segment in mirage status --json.
type segmentJSON struct {
	Index    int        `json:"index"`
	Attempt  int        `json:"attempt"`
	JobID    string     `json:"job_id,omitempty"`
	State    string     `json:"state"`
	Submit   *time.Time `json:"submit,omitempty"`
	Start    *time.Time `json:"start,omitempty"`
	End      *time.Time `json:"end,omitempty"`
	ExitCode int        `json:"exit_code"`
	Note     string     `json:"note,omitempty"`
	GapSec   *float64   `json:"gap_s,omitempty"` // start − predecessor's end (final attempts only)
}

// chainJSON is one chain in mirage status --json.
type chainJSON struct {
	ID          string        `json:"id"`
	Name        string        `json:"name"`
	Script      string        `json:"script"`
	Args        []string      `json:"args,omitempty"`
	Policy      string        `json:"policy"`
	Segments    int           `json:"segments"` // 0: until done
	MaxRetries  int           `json:"max_retries"`
	Account     string        `json:"account,omitempty"`
	Partition   string        `json:"partition,omitempty"`
	TimeLimitS  int64         `json:"time_limit_s"`
	Nodes       int           `json:"nodes"`
	GPUs        int           `json:"gpus"`
	State       string        `json:"state"`
	Reason      string        `json:"reason,omitempty"`
	Created     time.Time     `json:"created"`
	SegmentList []segmentJSON `json:"segment_list"`
}

func toJSON(v *provisioner.ChainView) chainJSON {
	c := &v.Chain
	j := chainJSON{ID: c.ID, Name: c.Name, Script: c.Script, Args: c.Args, Policy: c.Policy, Segments: c.Segments, MaxRetries: c.MaxRetries,
		Account: c.Account, Partition: c.Partition, TimeLimitS: int64(c.TimeLimit / time.Second), Nodes: c.Nodes, GPUs: c.GPUs,
		State: string(c.State), Reason: c.Reason, Created: c.Created, SegmentList: []segmentJSON{}}
	for i, s := range v.Segments {
		sj := segmentJSON{Index: s.Index, Attempt: s.Attempt, JobID: s.JobID, State: string(s.State), ExitCode: s.ExitCode, Note: s.Note,
			Submit: timePtr(s.Submit), Start: timePtr(s.Start), End: timePtr(s.End)}
		if g, ok := v.Gaps[i]; ok {
			v := g.Seconds()
			sj.GapSec = &v
		}
		j.SegmentList = append(j.SegmentList, sj)
	}
	return j
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func statusRun(ctx context.Context, o *statusOptions) error {
	out := o.f.Out
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.chain != "" {
		v, err := provisioner.ChainStatus(ctx, st, o.chain)
		if err != nil {
			return stateErr(err)
		}
		if o.json {
			return printJSON(out, toJSON(v))
		}
		return printChain(out, v)
	}
	views, err := provisioner.ChainStatuses(ctx, st, o.active)
	if err != nil {
		return stateErr(err)
	}
	if o.json {
		all := make([]chainJSON, 0, len(views))
		for i := range views {
			all = append(all, toJSON(&views[i]))
		}
		return printJSON(out, all)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHAIN\tNAME\tPOLICY\tSTATE\tSEGMENT\tJOB\tJOB STATE\tLAST GAP\tREASON")
	for i := range views {
		v := &views[i]
		c := &v.Chain
		segCol, job, jobState := "-", "-", "-"
		if n := len(v.Segments); n > 0 {
			last := v.Segments[n-1]
			segCol = segmentOf(last.Index, c.Segments)
			if last.JobID != "" {
				job = last.JobID
			}
			jobState = string(last.State)
		}
		gapCol := "-"
		if g, ok := v.LastGap(); ok {
			gapCol = signed(g)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Policy, c.State, segCol, job, jobState, gapCol, dash(c.Reason))
	}
	return tw.Flush()
}

// segmentOf renders "2/3" (second of three) or "2/until done".
func segmentOf(index, n int) string {
	if n == 0 {
		return strconv.Itoa(index+1) + "/until done"
	}
	return strconv.Itoa(index+1) + "/" + strconv.Itoa(n)
}

func printChain(out io.Writer, v *provisioner.ChainView) error {
	c := &v.Chain
	fmt.Fprintf(out, "chain     %s (%s)\n", c.ID, c.Name)
	fmt.Fprintf(out, "state     %s", c.State)
	if c.Reason != "" {
		fmt.Fprintf(out, ": %s", c.Reason)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "script    %s %s\n", c.Script, strings.Join(c.Args, " "))
	fmt.Fprintf(out, "policy    %s, %s, max retries %d\n", c.Policy, segmentsText(c.Segments), c.MaxRetries)
	fmt.Fprintf(out, "shape     limit %s, %d node(s), %d GPU(s), partition %s, account %s\n", limitText(c.TimeLimit), max(c.Nodes, 1), c.GPUs, dash(c.Partition), dash(c.Account))
	fmt.Fprintf(out, "created   %s\n\n", c.Created.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEG\tTRY\tJOB\tSTATE\tEXIT\tSUBMIT\tSTART\tEND\tGAP\tNOTE")
	for i, s := range v.Segments {
		gap := "-"
		if g, ok := v.Gaps[i]; ok {
			gap = signed(g)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Index, s.Attempt, dash(s.JobID), s.State, s.ExitCode,
			clock(s.Submit), clock(s.Start), clock(s.End), gap, dash(s.Note))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	interruption, overlap := v.Totals()
	_, err := fmt.Fprintf(out, "\ninterruption %s in total, overlap %s in total\n", interruption, overlap)
	return err
}

func limitText(d time.Duration) string {
	if d == 0 {
		return "partition default"
	}
	return d.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}
