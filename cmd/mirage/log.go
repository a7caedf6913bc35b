package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

// logOptions are the flags of mirage log.
type logOptions struct {
	f      *Factory
	chain  string
	json   bool
	events bool
	state  stateOptions
}

func newLogCmd(f *Factory, runF func(*logOptions) error) *cobra.Command {
	o := &logOptions{f: f}
	cmd := &cobra.Command{
		Use:   "log CHAIN",
		Short: "Show a chain's decisions with their reasons (and, with --events, what happened to its jobs)",
		Long: `Every decision the daemon made for the chain, oldest first: the time, the
segment it was about, the policy, the action (wait, submit, submit-after, first,
retry, adopt, abandon, end, cancel, error), the reason, the job submitted and any
error. Consecutive waits about one segment under one policy, without error, are
one entry: first and last time, how many (wait ×N) and the latest reason, so a
chain that waits for days keeps a short log.
--events adds the event log: submissions, starts, ends, gaps between segments.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chain = args[0]
			if runF != nil {
				return runF(o)
			}
			return logRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&o.events, "events", false, "also print the event log")
	o.state.add(cmd)
	return cmd
}

type decisionJSON struct {
	Time     time.Time `json:"time"`
	Segment  int       `json:"segment"`
	Policy   string    `json:"policy"`
	Action   string    `json:"action"`
	Reason   string    `json:"reason,omitempty"`
	Score    float64   `json:"score"`
	Features string    `json:"features,omitempty"`
	JobID    string    `json:"job_id,omitempty"`
	Error    string    `json:"error,omitempty"`
	Count    int       `json:"count"`         // consecutive identical waits this entry stands for
	Last     time.Time `json:"last,omitzero"` // time of the last of them, when more than one
}

type eventJSON struct {
	Time    time.Time `json:"time"`
	Segment int       `json:"segment"`
	Attempt int       `json:"attempt"`
	JobID   string    `json:"job_id,omitempty"`
	Kind    string    `json:"kind"`
	Detail  string    `json:"detail,omitempty"`
	Value   float64   `json:"value"`
}

func logRun(ctx context.Context, o *logOptions) error {
	out := o.f.Out
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	lg, err := provisioner.ChainLog(ctx, st, o.chain, o.events)
	if err != nil {
		return stateErr(err)
	}
	c, ds, evs := &lg.Chain, lg.Decisions, lg.Events
	if o.json {
		v := struct {
			Chain     string         `json:"chain"`
			Decisions []decisionJSON `json:"decisions"`
			Events    []eventJSON    `json:"events,omitempty"`
		}{Chain: c.ID, Decisions: []decisionJSON{}}
		for _, d := range ds {
			dj := decisionJSON{Time: d.Time.UTC(), Segment: d.Segment, Policy: d.Policy, Action: string(d.Action),
				Reason: d.Reason, Score: d.Score, Features: d.Features, JobID: d.JobID, Error: d.Error, Count: max(d.Count, 1)}
			if d.Count > 1 {
				dj.Last = d.Last.UTC()
			}
			v.Decisions = append(v.Decisions, dj)
		}
		for _, e := range evs {
			v.Events = append(v.Events, eventJSON{Time: e.Time.UTC(), Segment: e.Segment, Attempt: e.Attempt, JobID: e.JobID, Kind: string(e.Kind), Detail: e.Detail, Value: e.Value})
		}
		return printJSON(out, v)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSEG\tPOLICY\tACTION\tJOB\tREASON")
	for _, d := range ds {
		reason := d.Reason
		if d.Error != "" {
			reason += " [error: " + d.Error + "]"
		}
		when, action := clock(d.Time), string(d.Action)
		if d.Count > 1 {
			when += " – " + clock(d.Last)
			action += fmt.Sprintf(" ×%d", d.Count)
			reason = "latest: " + reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", when, segText(d.Segment), d.Policy, action, dash(d.JobID), reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !o.events {
		return nil
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSEG\tJOB\tEVENT\tDETAIL")
	for _, e := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", clock(e.Time), segText(e.Segment), dash(e.JobID), e.Kind, e.Detail)
	}
	return tw.Flush()
}

func segText(i int) string {
	if i < 0 {
		return "-"
	}
	return fmt.Sprint(i)
}
