package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

func init() { register(newDaemonCmd) }

// daemonOptions are the flags of mirage daemon.
type daemonOptions struct {
	once      bool
	interval  time.Duration
	json      bool
	maxCycles int // stop after this many cycles (0: run until signalled)
	grace     time.Duration
	state     stateOptions
	backend   backendOptions
}

func newDaemonCmd() *cobra.Command {
	o := &daemonOptions{}
	cmd := &cobra.Command{
		Use:   "daemon [--once | --interval 10m]",
		Short: "Reconcile every chain with the cluster and submit successors when their policies say so",
		Long: `Each cycle takes a lock beside the state database, reads one cluster snapshot
and the recent history, reconciles every active chain, asks each chain's policy
whether to submit its successor now, submits, and records every decision with
its reason.

--once runs one cycle, for cron or a systemd timer; when another daemon holds
the lock it says so and exits 0. Without --once it runs a cycle every --interval.

cron and systemd set-up, crash safety and recovery: docs/guide/chains-and-daemon.md.`,
		Example: `  # crontab -e
  */10 * * * * mirage daemon --once >> ~/.local/state/mirage/daemon.log 2>&1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.grace <= 0 {
				return withCode(exitUsage, fmt.Errorf("--submit-grace %s: want a positive duration", o.grace))
			}
			if o.interval <= 0 {
				return withCode(exitUsage, fmt.Errorf("--interval %s: want a positive duration", o.interval))
			}
			return runDaemon(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.once, "once", false, "run one cycle and exit (for cron)")
	f.DurationVar(&o.interval, "interval", 10*time.Minute, "time between cycles")
	f.BoolVar(&o.json, "json", false, "print each cycle's report as JSON")
	f.IntVar(&o.maxCycles, "max-cycles", 0, "stop after this many cycles (0: until signalled)")
	_ = f.MarkHidden("max-cycles")
	addSubmitGrace(cmd, &o.grace)
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

// cycleJSON is one cycle's report as JSON.
type cycleJSON struct {
	Time        time.Time        `json:"time"`
	Acted       bool             `json:"acted"` // false when another daemon held the lock
	Chains      int              `json:"chains"`
	Submitted   int              `json:"submitted"`
	Rejected    int              `json:"rejected"`
	Adopted     int              `json:"adopted"`
	Updated     int              `json:"updated"`
	Ended       int              `json:"ended"`
	Waits       int              `json:"waits"`
	Cancelled   int              `json:"cancelled"`
	Errors      int              `json:"errors"`
	HistoryOK   bool             `json:"history_ok"`
	Submissions []submissionJSON `json:"submissions,omitempty"`
	Error       string           `json:"error,omitempty"`
}

type submissionJSON struct {
	Chain   string `json:"chain"`
	Segment int    `json:"segment"`
	Attempt int    `json:"attempt"`
	JobID   string `json:"job_id,omitempty"`
	Error   string `json:"error,omitempty"`
}

func runDaemon(ctx context.Context, out io.Writer, o *daemonOptions) error {
	cl, err := deps.backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	dir, err := o.state.resolve()
	if err != nil {
		return err
	}
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	eng := newEngine(cl, st, o.grace)
	lockPath := filepath.Join(dir, state.LockName)
	for cycle := 1; ; cycle++ {
		err := daemonCycle(ctx, out, o, eng, lockPath)
		if o.once {
			return err
		}
		if err != nil {
			slog.Error("daemon cycle failed; trying again next cycle", "err", err)
		}
		if o.maxCycles > 0 && cycle >= o.maxCycles {
			return nil
		}
		if err := deps.sleep(ctx, o.interval); err != nil {
			return nil // signalled: stop between cycles
		}
	}
}

// daemonCycle runs one locked cycle and prints its report.
func daemonCycle(ctx context.Context, out io.Writer, o *daemonOptions, eng *provisioner.Engine, lockPath string) error {
	lk, err := state.TryLock(lockPath)
	if errors.Is(err, state.ErrHeld) {
		if o.json {
			return printJSON(out, cycleJSON{Time: deps.clock.Now(), Acted: false, Error: err.Error()})
		}
		_, werr := fmt.Fprintf(out, "another mirage daemon holds the lock %s: not acting this time\n", lockPath)
		return werr
	}
	if err != nil {
		return withCode(exitUnavailable, err)
	}
	defer lk.Unlock()
	if eng.Fault != nil {
		eng.Fault("after-lock")
	}
	rep, cerr := eng.Cycle(ctx)
	if o.json {
		j := cycleJSON{Time: rep.Time, Acted: true, Chains: rep.Chains, Submitted: rep.Submitted(), Rejected: rep.Rejected(), Adopted: rep.Adopted,
			Updated: rep.Updated, Ended: rep.Ended, Waits: rep.Waits, Cancelled: rep.Cancelled, Errors: rep.Errors, HistoryOK: rep.HistoryOK}
		for _, s := range rep.Submissions {
			sj := submissionJSON{Chain: s.ChainID, Segment: s.Segment, Attempt: s.Attempt, JobID: s.JobID}
			if s.Err != nil {
				sj.Error = s.Err.Error()
			}
			j.Submissions = append(j.Submissions, sj)
		}
		if cerr != nil {
			j.Error = cerr.Error()
		}
		if err := printJSON(out, j); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%s cycle: %d active chains; %d submitted, %d rejected, %d adopted, %d waits, %d ended, %d cancelled, %d errors\n",
			rep.Time.UTC().Format(time.RFC3339), rep.Chains, rep.Submitted(), rep.Rejected(), rep.Adopted, rep.Waits, rep.Ended, rep.Cancelled, rep.Errors)
		for _, s := range rep.Submissions {
			if s.Err != nil {
				fmt.Fprintf(out, "  chain %s segment %d.%d: not submitted: %v\n", s.ChainID, s.Segment, s.Attempt, s.Err)
			} else {
				fmt.Fprintf(out, "  chain %s segment %d.%d: job %s\n", s.ChainID, s.Segment, s.Attempt, s.JobID)
			}
		}
	}
	return stateErr(cerr)
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
