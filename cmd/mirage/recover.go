package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

func init() { register(newRecoverCmd) }

// recoverOptions are the flags of mirage recover.
type recoverOptions struct {
	chains  []string // only these chains (all when empty)
	since   time.Duration
	dryRun  bool
	json    bool
	state   stateOptions
	backend backendOptions
}

func newRecoverCmd() *cobra.Command {
	o := &recoverOptions{}
	cmd := &cobra.Command{
		Use:   "recover [CHAIN...] [--since 168h] [--dry-run]",
		Short: "Rebuild chains the state database does not know from the tagged jobs in squeue and sacct",
		Long: `Every job mirage submits carries its chain's tag and specification in its
comment. recover reads the live jobs and the accounting history of the last
--since, groups tagged jobs by chain, and registers each chain the database does
not hold, with its segments, so the daemon can carry on. Chains already in the
database are left alone. With CHAIN arguments only those chains are considered.
Slurm must keep comments in accounting (AccountingStoreFlags=job_comment).

Recovery in full: docs/guide/chains-and-daemon.md.`,
		Example: `  mirage recover --dry-run            # what would be rebuilt
  mirage recover                      # every chain found in the last 7 days
  mirage recover c-20261123-ab12cd    # one chain`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chains = args
			if o.since <= 0 {
				return withCode(exitUsage, fmt.Errorf("--since %s: want a positive duration", o.since))
			}
			return runRecover(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().DurationVar(&o.since, "since", 7*24*time.Hour, "how far back to read the accounting history")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "show what would be recovered, change nothing")
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

// recovered is one chain found by recover.
type recovered struct {
	Chain  string `json:"chain"`
	Jobs   int    `json:"jobs"`
	State  string `json:"state"`
	Action string `json:"action"` // recovered, known, would-recover
	Note   string `json:"note,omitempty"`
}

func runRecover(ctx context.Context, out io.Writer, o *recoverOptions) error {
	cl, err := deps.backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	hs, ok := cl.(provisioner.HistorySource)
	if !ok {
		return withCode(exitUnavailable, errors.New("this backend keeps no job history; recover needs one (Slurm with accounting)"))
	}
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	lk, err := o.state.lock(ctx, o.state.lockWait)
	if err != nil {
		return stateErr(err)
	}
	defer lk.Unlock()
	now := deps.clock.Now()
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		return stateErr(fmt.Errorf("cluster snapshot: %w", err))
	}
	hist, err := hs.History(ctx, now.Add(-o.since))
	if err != nil {
		return stateErr(fmt.Errorf("job history (sacct): %w", err))
	}
	// Group tagged jobs by chain; a job seen live and in the history counts once (live wins while unfinished).
	byID := map[string]provisioner.Job{}
	for _, j := range hist {
		byID[j.ID] = j
	}
	for _, j := range snap.Jobs {
		if old, ok := byID[j.ID]; !ok || !old.State.Finished() {
			byID[j.ID] = j
		}
	}
	type tj struct {
		tag provisioner.Tag
		job provisioner.Job
	}
	chains := map[string][]tj{}
	for _, j := range byID {
		if t, ok := provisioner.ParseTag(j.Comment); ok && (len(o.chains) == 0 || slices.Contains(o.chains, t.Chain)) {
			chains[t.Chain] = append(chains[t.Chain], tj{t, j})
		}
	}
	ids := make([]string, 0, len(chains))
	for id := range chains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var results []recovered
	for _, id := range ids {
		jobs := chains[id]
		slices.SortFunc(jobs, func(a, b tj) int {
			if c := cmp.Compare(a.tag.Segment, b.tag.Segment); c != 0 {
				return c
			}
			if c := cmp.Compare(a.tag.Attempt, b.tag.Attempt); c != 0 {
				return c
			}
			return cmp.Compare(a.job.Submit.UnixNano(), b.job.Submit.UnixNano())
		})
		r := recovered{Chain: id, Jobs: len(jobs)}
		if _, err := st.Chain(ctx, id); err == nil {
			r.Action, r.Note = "known", "already in the state database"
			results = append(results, r)
			continue
		} else if !errors.Is(err, provisioner.ErrChainNotFound) {
			return stateErr(err)
		}
		var ch provisioner.Chain
		found := false
		for i := len(jobs) - 1; i >= 0 && !found; i-- {
			ch, found = provisioner.ParseChainSpec(jobs[i].job.Comment)
		}
		if !found {
			ch = provisioner.Chain{ID: id, Name: jobs[0].job.Name, Policy: provisioner.PolicyReactive, State: provisioner.ChainFailed,
				Reason: "recovered from tags without a specification: cannot submit successors (resubmit with mirage submit)"}
		}
		if ch.Created.IsZero() {
			ch.Created = jobs[0].job.Submit
		}
		var segs []provisioner.Segment
		seen := map[[2]int]bool{}
		anyLive := false
		for _, x := range jobs {
			k := [2]int{x.tag.Segment, x.tag.Attempt}
			if seen[k] {
				continue // a duplicate tag: keep the first submitted
			}
			seen[k] = true
			j := x.job
			segs = append(segs, provisioner.Segment{ChainID: id, Index: x.tag.Segment, Attempt: x.tag.Attempt, JobID: j.ID, State: j.State,
				Submit: j.Submit, Start: j.Start, End: j.End, ExitCode: j.ExitCode})
			anyLive = anyLive || !j.State.Finished()
		}
		if last := segs[len(segs)-1]; ch.State == provisioner.ChainActive && !anyLive && last.State == provisioner.StateCancelled {
			ch.State, ch.Reason = provisioner.ChainCancelled, fmt.Sprintf("recovered: its last job %s was cancelled", last.JobID)
		}
		r.State, r.Note = string(ch.State), ch.Reason
		if o.dryRun {
			r.Action = "would-recover"
			results = append(results, r)
			continue
		}
		err := st.InTx(ctx, func(tx provisioner.Store) error {
			if err := tx.PutChain(ctx, &ch); err != nil {
				return err
			}
			for i := range segs {
				if err := tx.PutSegment(ctx, &segs[i]); err != nil {
					return err
				}
			}
			return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: id, Segment: -1, Kind: provisioner.EventRegistered,
				Detail: fmt.Sprintf("recovered from %d tagged job(s) in squeue/sacct", len(segs))})
		})
		if err != nil {
			return stateErr(err)
		}
		r.Action = "recovered"
		results = append(results, r)
	}
	if o.json {
		if results == nil {
			results = []recovered{}
		}
		return printJSON(out, results)
	}
	if len(results) == 0 {
		_, err := fmt.Fprintf(out, "no tagged jobs in squeue or in sacct since %s\n", now.Add(-o.since).UTC().Format(time.RFC3339))
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHAIN\tJOBS\tACTION\tSTATE\tNOTE")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", r.Chain, r.Jobs, r.Action, dash(r.State), dash(r.Note))
	}
	return tw.Flush()
}
