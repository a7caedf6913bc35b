package main

import (
	"errors"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

// simOptions are the flags of mirage sim; the cluster's bind into opts.
type simOptions struct {
	f              *Factory
	opts           sim.Options
	trace, jobsOut string
	report, json   bool
	traceOpts      traceFlags
}

func newSimCmd(f *Factory, runF func(*simOptions) error) *cobra.Command {
	o := &simOptions{f: f}
	cmd := &cobra.Command{
		Use: "sim --trace FILE [--preset ls6 | --slurm-conf FILE] [--report] [--json]",
		Example: `  mirage sim --trace ls6.log.gz --report            # simulated vs recorded waits
  mirage sim --trace jobs.swf --preset default --slurm-conf /etc/slurm/slurm.conf --jobs sim.csv
  mirage sim --trace openb_pod_list_default.csv --node-list openb_node_list_all_node.csv --report`,
		Short: "Replay a job trace in the discrete-event Slurm simulator",
		Long: `Replay a recorded trace in the simulator and print per-job simulated start and
end or, with --report, the fidelity of simulated against recorded waits.

Hold detection and the ls6 preset's fidelity: docs/guide/training-and-evaluation.md
and docs/results/fidelity.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return simRun(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.trace, "trace", "", "trace file (required)")
	fl.StringVar(&o.opts.Preset, "preset", "ls6", "cluster preset: ls6, default (Slurm defaults; needs --slurm-conf for nodes) or a preset file (mirage sim calibrate)")
	fl.StringVar(&o.opts.SlurmConf, "slurm-conf", "", "read nodes, partitions, Priority* and SchedulerParameters from this slurm.conf (over the preset)")
	fl.StringVar(&o.opts.NodeList, "node-list", "", "take the nodes from this node list (sn,cpu_milli,memory_mib,gpu,model; as the openb traces ship) as one shared partition")
	fl.BoolVar(&o.report, "report", false, "compare simulated with recorded waits")
	fl.BoolVar(&o.json, "json", false, "JSON output")
	fl.StringVar(&o.jobsOut, "jobs", "", "write per-job simulated start/end as CSV to this file")
	fl.IntVar(&o.opts.Nodes, "nodes", 0, "override: keep only the first N nodes")
	fl.StringVar(&o.opts.Backfill, "backfill", "", "override: on or off")
	fl.DurationVar(&o.opts.BFWindow, "bf-window", 0, "override: bf_window")
	fl.DurationVar(&o.opts.Latency, "sched-latency", -1, "override: event-triggered main pass latency bound")
	fl.Uint64Var(&o.opts.Seed, "seed", 1, "seed of the scheduling-latency draws")
	fl.StringVar(&o.opts.Weights, "weights", "", "override priority weights: age=N,fairshare=N,size=N,partition=N,qos=N")
	o.traceOpts.add(cmd)
	_ = cmd.MarkFlagRequired("trace")
	cmd.AddCommand(newSimCalibrateCmd(f))
	return cmd
}

// simConfig builds the simulated cluster: a bad option is a usage error, a bad slurm.conf bad input.
func simConfig(opts sim.Options) (sim.Config, error) {
	cfg, err := opts.Config()
	switch {
	case errors.Is(err, sim.ErrOption):
		return cfg, cmdutil.WithCode(cmdutil.ExitUsage, err)
	case err != nil:
		return cfg, cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	return cfg, nil
}

func simRun(o *simOptions) error {
	cfg, err := simConfig(o.opts)
	if err != nil {
		return err
	}
	jobs, err := o.traceOpts.read(o.trace)
	if err != nil {
		return err
	}
	from, to := traces.Span(jobs)
	bar := term.NewProgress(o.f.progress(), "")
	var prog func(time.Time)
	if o.f.progress() != nil && to.After(from) {
		prog = func(now time.Time) {
			bar.Fraction(float64(now.Sub(from))/float64(to.Sub(from)), now.Format("2006-01-02"))
		}
	}
	wall := time.Now() // reporting only: wall-clock speed of the replay
	rep, res, err := sim.Fidelity(jobs, cfg, prog)
	bar.Done()
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	r := &sim.Replay{Trace: o.trace, Preset: o.opts.Preset, Nodes: len(cfg.Nodes), Seed: cfg.Seed, WallSec: time.Since(wall).Seconds(),
		Replayed: rep.Jobs, Fidelity: rep, JobsFile: o.jobsOut != ""}
	if o.jobsOut != "" {
		if err := sim.WriteResultsFile(o.jobsOut, res); err != nil {
			return err
		}
	}
	switch {
	case o.report:
		r.Report = rep
	case !r.JobsFile:
		r.Jobs = res
	}
	return cmdutil.PrintView(o.f.Out, o.json, r, r)
}
