package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/sim"
)

// simCalOptions are the flags of mirage sim calibrate.
type simCalOptions struct {
	f                           *Factory
	spec                        sim.CalibrateSpec
	opts                        sim.Options
	trace, out                  string
	fitFrom, fitUntil, scoreEnd string
	json                        bool
	traceOpts                   traceFlags
}

func newSimCalibrateCmd(f *Factory) *cobra.Command {
	o := &simCalOptions{f: f}
	cmd := &cobra.Command{
		Use:   "calibrate --trace FILE --fit-until DATE --out PRESET.yaml [--preset ls6]",
		Short: "Fit the simulator's parameters to a trace's recorded waits and write a preset",
		Long: `Search the usable node count, the priority weights and PriorityMaxAge, the scheduling latency and
bf_interval for the replay whose waits match the trace's recorded waits on the
jobs submitted before --fit-until, then report the fidelity on the later jobs
(up to --score-until) that the search never looked at. The preset written is
accepted by --preset of mirage sim, train, eval and predict-wait.
Objective and method: docs/guide/training-and-evaluation.md.`,
		Example: `  mirage sim calibrate --trace ls6.log.gz --fit-until 2023-02-01 --out ls6-calibrated.yaml
  mirage sim calibrate --trace openb_pod_list_default.csv --node-list openb_node_list_all_node.csv \
    --fit-until 2023-04-11 --out openb-calibrated.yaml
  mirage sim --trace ls6.log.gz --preset ./ls6-calibrated.yaml --report`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return simCalibrate(cmd.Context(), o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.trace, "trace", "", "trace file (required)")
	fl.StringVar(&o.out, "out", "", "preset file to write (required)")
	fl.StringVar(&o.opts.Preset, "preset", "ls6", "preset searched from: ls6, default (with --slurm-conf) or a preset file")
	fl.StringVar(&o.opts.SlurmConf, "slurm-conf", "", "read nodes, partitions and scheduler parameters from this slurm.conf (over the preset)")
	fl.StringVar(&o.opts.NodeList, "node-list", "", "take the nodes from this node list (sn,cpu_milli,memory_mib,gpu,model; as the openb traces ship) as one shared partition")
	fl.StringVar(&o.fitFrom, "fit-from", "", "fit on jobs submitted from this time (default: the trace's start)")
	fl.StringVar(&o.fitUntil, "fit-until", "", "fit on jobs submitted before this time; later ones are scored (required)")
	fl.StringVar(&o.scoreEnd, "score-until", "", "score jobs submitted before this time (default: to the trace's end)")
	fl.IntVar(&o.spec.HoldNodes, "hold-nodes", 0, "usable nodes hold detection assumes (default: the preset's)")
	fl.IntVar(&o.spec.Rounds, "rounds", 3, "coordinate-descent rounds at most")
	fl.IntVar(&o.spec.Replicas, "replicas", 3, "replays per candidate (seeds --seed, --seed+1, …), their waits pooled")
	fl.Uint64Var(&o.opts.Seed, "seed", 1, "seed of the first replica's scheduling-latency draws")
	fl.IntVar(&o.spec.Workers, "workers", 0, "parallel replays (default: all cores)")
	fl.BoolVar(&o.json, "json", false, "print the calibration as JSON")
	o.traceOpts.add(cmd)
	for _, req := range []string{"trace", "out", "fit-until"} {
		_ = cmd.MarkFlagRequired(req)
	}
	return cmd
}

func simCalibrate(ctx context.Context, o *simCalOptions) error {
	o.opts.Latency = -1
	base, err := simConfig(o.opts)
	if err != nil {
		return err
	}
	jobs, err := o.traceOpts.read(o.trace)
	if err != nil {
		return err
	}
	loc := jobs[0].Submit.Location()
	s := o.spec
	s.Jobs, s.Base, s.Space = jobs, base, sim.DefaultSpace(base)
	for _, t := range []struct {
		flag, v string
		dst     *time.Time
	}{{"fit-from", o.fitFrom, &s.Fit.From}, {"fit-until", o.fitUntil, &s.Fit.Until}, {"score-until", o.scoreEnd, &s.Score.Until}} {
		if t.v != "" {
			if *t.dst, err = parseWhen(t.flag, t.v, loc); err != nil {
				return err
			}
		}
	}
	s.Score.From = s.Fit.Until
	bar, most := term.NewProgress(o.f.progress(), "calibrating"), float64(s.Space.MaxReplays(s.Rounds))
	s.Progress = func(done int, best float64) {
		bar.Fraction(min(1, float64(done)/most), fmt.Sprintf("%d replays, best objective %.3f", done, best))
	}
	cal, err := sim.Calibrate(ctx, s)
	bar.Done()
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	pf, err := sim.CalibratedPreset(o.opts, filepath.Base(o.trace), cal)
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	if err := sim.WritePresetFile(o.out, pf); err != nil {
		return err
	}
	return cmdutil.PrintView(o.f.Out, o.json, cal, cal)
}
