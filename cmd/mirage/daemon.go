package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// daemonOptions are the flags of mirage daemon.
type daemonOptions struct {
	f         *Factory
	once      bool
	interval  time.Duration
	json      bool
	maxCycles int // stop after this many cycles (0: run until signalled)
	memLimit  int // soft heap limit in MiB (0: Go's default)
	grace     time.Duration
	policy    policyOptions
	state     stateOptions
	backend   backendOptions
}

func newDaemonCmd(f *Factory, runF func(*daemonOptions) error) *cobra.Command {
	o := &daemonOptions{f: f}
	cmd := &cobra.Command{
		Use:   "daemon [--once | --interval 10m]",
		Short: "Reconcile every chain with the cluster and submit successors when their policies say so",
		Long: `Each cycle takes the lock, reads the cluster and recent history, reconciles every
active chain, asks each chain's policy whether to submit its successor now, and
records every decision with its reason. --once runs one cycle (cron, systemd; a
held lock is said, exit 0). Set-up and crash safety: docs/guide/chains-and-daemon.md.`,
		Example: `  mirage daemon --once --slurm-conf /etc/slurm/slurm.conf   # one cycle by hand, as cron will run it
  # crontab -e: cron's PATH holds no mirage and its environment no SLURM_CONF, so give both
  */10 * * * * $HOME/.local/bin/mirage daemon --once --slurm-conf /etc/slurm/slurm.conf >> $HOME/mirage-cron.log 2>&1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.grace <= 0 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--submit-grace %s: want a positive duration", o.grace))
			}
			if o.interval <= 0 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--interval %s: want a positive duration", o.interval))
			}
			if cmd.Flags().Changed("lead") && o.policy.lead <= 0 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--lead %s: want a positive duration (your cron period, or --interval)", o.policy.lead))
			}
			if runF != nil {
				return runF(o)
			}
			return daemonRun(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.once, "once", false, "run one cycle and exit (for cron)")
	fl.DurationVar(&o.interval, "interval", 10*time.Minute, "time between cycles")
	fl.BoolVar(&o.json, "json", false, "print each cycle's report as JSON")
	fl.IntVar(&o.maxCycles, "max-cycles", 0, "stop after this many cycles (0: until signalled)")
	_ = fl.MarkHidden("max-cycles")
	fl.IntVar(&o.memLimit, "memory-limit", defaultMemLimitMiB, "soft limit on the daemon's heap, in MiB: the garbage collector works harder near it, "+
		"and past it the daemon still runs (0: Go's default; GOMEMLIMIT in the environment wins)")
	addSubmitGrace(cmd, &o.grace)
	o.policy.add(cmd)
	o.policy.addLead(cmd)
	o.state.add(cmd)
	o.backend.add(cmd)
	return cmd
}

func daemonRun(ctx context.Context, o *daemonOptions) error {
	if o.memLimit < 0 {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--memory-limit %d: want MiB, 0 or more", o.memLimit))
	}
	applyMemLimit(o.memLimit, o.f.Getenv, debug.SetMemoryLimit)
	dir, err := o.state.Resolve()
	if err != nil {
		return stateErr(err)
	}
	o.backend.scriptDir = scriptsDir(dir)
	o.backend.viewMemo = filepath.Join(dir, slurm.ViewMemoName)
	cl, err := o.f.Backend(&o.backend)
	if err != nil {
		return stateErr(err)
	}
	st, err := o.state.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	key, err := o.state.tagKey(o.f)
	if err != nil {
		return err
	}
	rules, err := o.backend.loadRules()
	if err != nil {
		return err
	}
	eng := newEngine(o.f, cl, rules, st, key, o.grace, o.policy)
	lockPath := filepath.Join(dir, state.LockName)
	return daemonLoop(ctx, loopOptions{Once: o.once, Interval: o.interval, MaxCycles: o.maxCycles, Sleep: o.f.Sleep},
		func(ctx context.Context) error { return daemonCycle(ctx, o, eng, st, lockPath) })
}

// defaultMemLimitMiB is the daemon's soft heap limit. Without one Go lets
// the heap grow to twice what was live at the last collection: a cycle on a
// cluster of 100,000 queued and 200,000 recent jobs peaked at 345 MB
// resident with about 160 MB live, and 270 MB under this limit, for the
// same CPU (docs/results/daemon-scale.md). A login node is shared.
const defaultMemLimitMiB = 192

// applyMemLimit sets the soft heap limit to mib MiB through set
// (debug.SetMemoryLimit), unless mib is 0 or the environment sets
// GOMEMLIMIT (which the runtime has read already); it returns the limit
// set, or -1.
func applyMemLimit(mib int, getenv func(string) string, set func(int64) int64) int64 {
	if mib <= 0 || getenv("GOMEMLIMIT") != "" {
		return -1
	}
	limit := int64(mib) << 20
	set(limit)
	return limit
}

// daemonCycle runs one locked cycle and prints its report (the engine
// takes in the markers of `mirage done` through the store). Where the
// backend submits only private script copies, the chains' copies are
// brought up to date first (checkScripts) and those no active chain needs
// any more removed after (pruneScripts).
func daemonCycle(ctx context.Context, o *daemonOptions, eng *provisioner.Engine, st *state.Store, lockPath string) error {
	out := o.f.Out
	lk, err := state.TryLock(lockPath)
	if errors.Is(err, state.ErrHeld) {
		if o.json {
			return cmdutil.PrintJSON(out, chainops.CycleJSON{Time: o.f.Now(), Acted: false, Error: err.Error()})
		}
		_, werr := fmt.Fprintf(out, "another mirage daemon holds the lock %s: not acting this time\n", lockPath)
		return werr
	}
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitUnavailable, err)
	}
	defer lk.Unlock()
	if eng.Fault != nil {
		eng.Fault("after-lock")
	}
	if err := ping(ctx, eng.Cluster); err != nil {
		if o.json {
			_ = cmdutil.PrintJSON(out, chainops.CycleJSON{Time: o.f.Now(), Acted: false, Error: err.Error()})
		}
		return err
	}
	copies := copiesOf(eng.Cluster)
	if copies != "" {
		if err := checkScripts(ctx, st, copies, o.f.Now(), o.f.ErrOut); err != nil {
			return stateErr(fmt.Errorf("check the chains' scripts: %w", err))
		}
	}
	if err := rechooseSiteDefaults(ctx, st, siteSource{f: o.f, dir: filepath.Dir(lockPath)}, eng.Cluster, o.backend.capabilities(), o.policy); err != nil {
		return stateErr(fmt.Errorf("choose the site default again: %w", err))
	}
	rep, cerr := eng.Cycle(ctx)
	if copies != "" && cerr == nil {
		if err := pruneScripts(ctx, st, copies); err != nil {
			fmt.Fprintf(o.f.ErrOut, "mirage: remove unused script copies: %v\n", err)
		}
	}
	if o.json {
		if err := cmdutil.PrintJSON(out, chainops.ReportJSON(rep, cerr)); err != nil {
			return err
		}
	} else {
		_ = chainops.WriteReport(out, rep)
	}
	return stateErr(cerr)
}

// loopOptions configure Daemon.
type loopOptions struct {
	Once      bool                                             // run one cycle and return its error
	Interval  time.Duration                                    // time between cycles
	MaxCycles int                                              // stop after this many cycles (0: until ctx ends)
	Sleep     func(ctx context.Context, d time.Duration) error // waiting between cycles
	Log       *slog.Logger                                     // failed cycles (nil: slog.Default())
}

// daemonLoop runs cycle, then every Interval another, until ctx ends (while
// waiting between cycles) or MaxCycles have run. A failed cycle is logged
// and the next one tries again; with Once the one cycle's error is returned.
// cycle is one locked Engine.Cycle with its report, as the caller does it.
func daemonLoop(ctx context.Context, o loopOptions, cycle func(ctx context.Context) error) error {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	for n := 1; ; n++ {
		err := cycle(ctx)
		if o.Once {
			return err
		}
		if err != nil {
			log.Error("daemon cycle failed; trying again next cycle", "err", err)
		}
		if o.MaxCycles > 0 && n >= o.MaxCycles {
			return nil
		}
		if err := o.Sleep(ctx, o.Interval); err != nil {
			return nil // signalled: stop between cycles
		}
	}
}
