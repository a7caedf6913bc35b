package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

func init() { register(newHandoffCmd) }

// handoffOptions are the flags of mirage handoff.
type handoffOptions struct {
	job     string
	signal  string
	grace   time.Duration
	poll    time.Duration
	cancel  bool
	backend backendOptions
}

func newHandoffCmd() *cobra.Command {
	o := &handoffOptions{}
	cmd := &cobra.Command{
		Use:   "handoff [--signal USR1] [--grace 5m] [--cancel]",
		Short: "From a segment's job script: ask the predecessor to checkpoint and exit, and wait for it",
		Long: `When a successor starts while its predecessor still runs (overlap), the successor's
script calls mirage handoff before loading the checkpoint. handoff sends the
predecessor ($MIRAGE_PREV_JOB, or --job) the signal (default USR1; the
predecessor's script traps it, writes a checkpoint and exits) and waits up to
--grace for it to end. Exit 0 when the predecessor has ended (or there is none);
exit 1 when it still runs after the grace time, unless --cancel cancels it then.`,
		Example: `  # in the job script, before resuming from the checkpoint:
  mirage handoff --signal USR1 --grace 5m || exit 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.job == "" {
				o.job = os.Getenv(provisioner.EnvPrevJob)
			}
			if o.grace < 0 || o.poll <= 0 {
				return withCode(exitUsage, errors.New("--grace must not be negative and --poll must be positive"))
			}
			return runHandoff(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.job, "job", "", "predecessor job id (default: $MIRAGE_PREV_JOB)")
	f.StringVar(&o.signal, "signal", "USR1", "signal asking the predecessor to checkpoint and exit")
	f.DurationVar(&o.grace, "grace", 5*time.Minute, "how long to wait for the predecessor to end")
	f.DurationVar(&o.poll, "poll", 5*time.Second, "how often to look whether it has ended")
	f.BoolVar(&o.cancel, "cancel", false, "cancel the predecessor if it still runs after the grace time")
	o.backend.add(cmd)
	return cmd
}

func runHandoff(ctx context.Context, out io.Writer, o *handoffOptions) error {
	if o.job == "" {
		_, err := fmt.Fprintln(out, "no predecessor ($MIRAGE_PREV_JOB is empty): nothing to hand off")
		return err
	}
	cl, err := deps.backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	running, err := stillRunning(ctx, cl, o.job)
	if err != nil {
		return stateErr(err)
	}
	if !running {
		_, err := fmt.Fprintf(out, "predecessor %s is not running: nothing to hand off\n", o.job)
		return err
	}
	if err := cl.Signal(ctx, o.job, o.signal); err != nil {
		if errors.Is(err, provisioner.ErrNotFound) {
			_, err := fmt.Fprintf(out, "predecessor %s ended before the signal: nothing to hand off\n", o.job)
			return err
		}
		return stateErr(fmt.Errorf("signal %s to predecessor %s: %w", o.signal, o.job, err))
	}
	start := deps.clock.Now()
	fmt.Fprintf(out, "sent SIG%s to predecessor %s; waiting up to %s for it to end\n", o.signal, o.job, o.grace)
	for {
		running, err := stillRunning(ctx, cl, o.job)
		if err != nil {
			return stateErr(err)
		}
		waited := deps.clock.Now().Sub(start)
		if !running {
			_, err := fmt.Fprintf(out, "predecessor %s ended after %s: hand-off complete\n", o.job, waited.Round(time.Second))
			return err
		}
		if waited >= o.grace {
			break
		}
		if err := deps.sleep(ctx, min(o.poll, o.grace-waited)); err != nil {
			return err
		}
	}
	if o.cancel {
		if err := cl.Cancel(ctx, o.job); err != nil && !errors.Is(err, provisioner.ErrNotFound) {
			return stateErr(fmt.Errorf("cancel predecessor %s after the grace time: %w", o.job, err))
		}
		_, err := fmt.Fprintf(out, "predecessor %s still ran after %s: cancelled\n", o.job, o.grace)
		return err
	}
	return fmt.Errorf("predecessor %s still runs after %s (it may not trap SIG%s; use --cancel to cancel it then)", o.job, o.grace, o.signal)
}

// stillRunning reports whether the job is pending or running in the live view.
func stillRunning(ctx context.Context, cl provisioner.Cluster, id string) (bool, error) {
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		return false, fmt.Errorf("cluster snapshot: %w", err)
	}
	j := snap.Job(id)
	return j != nil && !j.State.Finished(), nil
}
