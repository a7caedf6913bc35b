package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

func init() { register(newCancelCmd) }

// cancelOptions are the flags of mirage cancel.
type cancelOptions struct {
	chain   string
	state   stateOptions
	backend backendOptions
}

func newCancelCmd() *cobra.Command {
	o := &cancelOptions{}
	cmd := &cobra.Command{
		Use:   "cancel CHAIN",
		Short: "Stop a chain: no more successors, and its pending or running jobs cancelled",
		Long: `Marks the chain cancelled first (so no daemon cycle submits for it again), then
cancels its jobs that are still pending or running. Running cancel again on a
cancelled chain retries the cancellation of jobs that are left.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.chain = args[0]
			return runCancel(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

func runCancel(ctx context.Context, out io.Writer, o *cancelOptions) error {
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := st.Chain(ctx, o.chain)
	if err != nil {
		return stateErr(err)
	}
	lk, err := o.state.lock(ctx, o.state.lockWait)
	if err != nil {
		return stateErr(err)
	}
	defer lk.Unlock()
	now := deps.clock.Now()
	// 1. mark the chain cancelled (a daemon cycle never acts on it again).
	if c.State == provisioner.ChainActive {
		c.State, c.Reason = provisioner.ChainCancelled, "cancelled by the user"
		err := st.InTx(ctx, func(tx provisioner.Store) error {
			if err := tx.PutChain(ctx, c); err != nil {
				return err
			}
			if err := tx.Record(ctx, &provisioner.DecisionRecord{Time: now, ChainID: c.ID, Segment: -1, Policy: c.Policy, Action: provisioner.ActCancel, Reason: "mirage cancel: chain cancelled by the user"}); err != nil {
				return err
			}
			return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: -1, Kind: provisioner.EventChainEnded, Detail: "cancelled: cancelled by the user"})
		})
		if err != nil {
			return stateErr(err)
		}
	}
	// 2. cancel its unfinished jobs.
	segs, err := st.Segments(ctx, c.ID)
	if err != nil {
		return stateErr(err)
	}
	var todo []provisioner.Segment
	for _, s := range segs {
		if s.JobID != "" && !s.State.Finished() {
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		_, err := fmt.Fprintf(out, "chain %s is %s (%s); no pending or running jobs to cancel\n", c.ID, c.State, c.Reason)
		return err
	}
	cl, err := deps.backend(&o.backend)
	if err != nil {
		return stateErr(fmt.Errorf("chain %s is marked %s, but its jobs could not be cancelled (run mirage cancel again): %w", c.ID, c.State, err))
	}
	var failed []error
	for _, s := range todo {
		if err := cl.Cancel(ctx, s.JobID); err != nil && !errors.Is(err, provisioner.ErrNotFound) {
			failed = append(failed, fmt.Errorf("job %s: %w", s.JobID, err))
			_ = st.AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: s.Index, Attempt: s.Attempt, JobID: s.JobID, Kind: provisioner.EventError, Detail: "cancel: " + err.Error()})
			continue
		}
		s.State, s.End, s.Note = provisioner.StateCancelled, now, "cancelled by mirage cancel"
		err := st.InTx(ctx, func(tx provisioner.Store) error {
			if err := tx.PutSegment(ctx, &s); err != nil {
				return err
			}
			return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: s.Index, Attempt: s.Attempt, JobID: s.JobID, Kind: provisioner.EventCancelled, Detail: "mirage cancel"})
		})
		if err != nil {
			return stateErr(err)
		}
		fmt.Fprintf(out, "cancelled job %s (segment %d)\n", s.JobID, s.Index)
	}
	if len(failed) > 0 {
		return stateErr(fmt.Errorf("chain %s is marked %s, but %d job(s) could not be cancelled (run mirage cancel again): %w", c.ID, c.State, len(failed), errors.Join(failed...)))
	}
	_, err = fmt.Fprintf(out, "chain %s cancelled\n", c.ID)
	return err
}
