package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/traces"
)

// trainOptions are the flags of mirage train: most bind straight into the
// pipeline's train.Spec; the trace, the cluster and the window bounds are
// read and parsed here.
type trainOptions struct {
	spec       train.Spec
	trace      string
	preset     string
	slurmConf  string
	from       string
	trainUntil string
	until      string
	json       bool
	traceOpts  traceFlags
	progress   io.Writer // stderr when it is a terminal, else nil
	now        func() time.Time
}

func newTrainCmd(factory *Factory, runF func(*trainOptions) error) *cobra.Command {
	o := &trainOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "train --trace FILE --model rf|rf-golearn|rf-xgb|xgb|dqn|pg|wait[,...] --out DIR",
		Short: "Train submission policies and the wait predictor in the simulator on a trace",
		Long: `Train learned policies (rf, rf-golearn, rf-xgb, xgb, dqn, pg) and the wait
predictor of mirage predict-wait (wait) on a recorded trace replayed in the
simulator; each model is saved as DIR/NAME/ with meta.json. Training uses the
chains injected in [--from, --train-until), validation those in [--train-until,
--until); times are RFC 3339, or dates/"YYYY-MM-DDTHH:MM" in the trace's zone.

What each model learns and how it decides: docs/guide/training-and-evaluation.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.progress = factory.progress()
			if runF != nil {
				return runF(o)
			}
			return runTrain(cmd.Context(), factory.Out, factory.ErrOut, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file (required)")
	f.StringSliceVar(&o.spec.Models, "model", nil, "models to train, comma-separated: rf, rf-golearn, rf-xgb, xgb, dqn, pg, wait (required)")
	f.StringVar(&o.spec.Out, "out", "", "models directory; each model goes to DIR/NAME (required)")
	f.StringVar(&o.preset, "preset", "ls6", "cluster preset: ls6 or default (needs --slurm-conf)")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "read nodes, partitions and scheduler parameters from this slurm.conf")
	f.StringVar(&o.from, "from", "", "first injection (default: the trace's first start + --warmup)")
	f.StringVar(&o.trainUntil, "train-until", "", "end of training; start of validation")
	f.StringVar(&o.until, "until", "", "end of validation injections (default: the trace's last submit)")
	f.Uint64Var(&o.spec.Seed, "seed", 1, "seed of the simulator's latency draws, load scaling and every fit")
	f.IntSliceVar(&o.spec.Protocol.Nodes, "nodes", []int{1, 8}, "chain sizes (nodes per segment)")
	f.DurationVar(&o.spec.Protocol.Every, "every", 4*time.Hour, "trace time between injections")
	f.DurationVar(&o.spec.Protocol.WarmUp, "warmup", 48*time.Hour, "warm-up after the trace's first start")
	f.DurationVar(&o.spec.Protocol.Tick, "tick", 10*time.Minute, "decision interval")
	f.DurationVar(&o.spec.Protocol.Limit, "limit", 48*time.Hour, "time limit of the injected segments, used fully")
	f.Float64SliceVar(&o.spec.Scales, "scales", []float64{1}, "arrival scalings of the training trace (1 = as recorded), e.g. 1,1.25,1.5")
	f.IntVar(&o.spec.Workers, "workers", 0, "simulator goroutines (default: all cores)")
	f.StringVar(&o.spec.Cache, "cache", "", "directory caching generated datasets")
	f.Float64Var(&o.spec.Cost.InterruptionPerHour, "cost-interruption", scenario.DefaultGapCost.InterruptionPerHour, "cost per hour of interruption")
	f.Float64Var(&o.spec.Cost.OverlapPerHour, "cost-overlap", scenario.DefaultGapCost.OverlapPerHour, "cost per hour of overlap")
	f.Float64Var(&o.spec.Cost.OverlapPerGPUHour, "cost-overlap-gpu", scenario.DefaultGapCost.OverlapPerGPUHour, "cost per GPU-hour of overlap")
	f.IntVar(&o.spec.DQNSteps, "dqn-steps", 0, "dqn environment steps (default 150000)")
	f.IntVar(&o.spec.PGIterations, "pg-iterations", 0, "pg updates of 16 chains each (default 800)")
	f.StringVar(&o.spec.Target, "target", models.TargetWait, "xgb regression target: wait or gap")
	f.IntVar(&o.spec.WaitReplicas, "wait-replicas", 5, "wait predictor: training replays of the trace, with simulator seeds --seed, --seed+1, …")
	f.BoolVar(&o.json, "json", false, "print the trained models' metadata as JSON")
	o.traceOpts.add(cmd)
	_ = cmd.MarkFlagRequired("trace")
	_ = cmd.MarkFlagRequired("model")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// loadTrace reads every job of a trace file.
func loadTrace(path string, tf traceFlags) ([]traces.Job, error) {
	topts, err := tf.options()
	if err != nil {
		return nil, err
	}
	r, err := traces.Open(path, topts)
	if err != nil {
		return nil, traceErr(err)
	}
	defer r.Close()
	var jobs []traces.Job
	for j, err := range traces.All(r) {
		if err != nil {
			return nil, traceErr(err)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, withCode(exitBadInput, fmt.Errorf("%s: no jobs", path))
	}
	return jobs, nil
}

// parseWhen parses a window bound: RFC 3339, or a date or "YYYY-MM-DDTHH:MM[:SS]" in loc.
func parseWhen(flag, s string, loc *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	inRange := func(t time.Time) (time.Time, error) {
		if t.Year() < 1970 {
			return time.Time{}, withCode(exitUsage, fmt.Errorf("--%s %q: want a time from 1970 on (trace times are Unix times)", flag, s))
		}
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return inRange(t)
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return inRange(t)
		}
	}
	return time.Time{}, withCode(exitUsage, fmt.Errorf("--%s %q: want RFC 3339 or YYYY-MM-DD[THH:MM[:SS]] (in the trace's zone)", flag, s))
}

func runTrain(ctx context.Context, out, errw io.Writer, o *trainOptions) error {
	names, err := trainNames(o.spec.Models)
	if err != nil {
		return err
	}
	cfg, err := presetConfig(o.preset, o.slurmConf, o.spec.Seed)
	if err != nil {
		return err
	}
	jobs, err := loadTrace(o.trace, o.traceOpts)
	if err != nil {
		return err
	}
	spec := o.spec
	spec.Models, spec.Jobs, spec.Cluster, spec.TraceName = names, jobs, cfg, filepath.Base(o.trace)
	loc := jobs[0].Submit.Location()
	if spec.From, err = parseWhen("from", o.from, loc); err != nil {
		return err
	}
	if spec.TrainUntil, err = parseWhen("train-until", o.trainUntil, loc); err != nil {
		return err
	}
	if spec.Until, err = parseWhen("until", o.until, loc); err != nil {
		return err
	}
	if err := checkTrainFlags(&spec, o); err != nil {
		return err
	}
	if st, err := os.Stat(o.trace); err == nil {
		spec.TraceKey = fmt.Sprintf("%s|%d|%d", spec.TraceName, st.Size(), st.ModTime().Unix())
	}
	if err := os.MkdirAll(spec.Out, 0o755); err != nil {
		return withCode(exitUnavailable, fmt.Errorf("--out: %w", err))
	}
	spec.Created = o.now().UTC().Truncate(time.Second)
	spec.Report, spec.Progress = errw, train.Bar{Progress: term.NewProgress(o.progress, "")}
	trained, err := train.Run(ctx, spec)
	switch {
	case err != nil:
		return trainExitErr(err)
	case o.json:
		return printJSON(out, trained)
	}
	return train.Summary(trained).WriteText(out)
}

// checkTrainFlags refuses flag values the pipeline would refuse, naming the flag.
func checkTrainFlags(spec *train.Spec, o *trainOptions) error {
	if !spec.TrainUntil.IsZero() && !spec.Until.IsZero() && !spec.Until.After(spec.TrainUntil) {
		return withCode(exitUsage, fmt.Errorf("--until %s is not after --train-until %s", o.until, o.trainUntil))
	}
	if spec.WaitReplicas < 1 || spec.WaitReplicas > 64 {
		return withCode(exitUsage, fmt.Errorf("--wait-replicas %d: want 1–64", spec.WaitReplicas))
	}
	for _, s := range spec.Scales {
		if s < 1 || s > 16 {
			return withCode(exitUsage, fmt.Errorf("--scales: %v outside [1, 16]", s))
		}
	}
	for _, n := range spec.Models {
		if n != train.WaitModel && spec.Target != models.TargetWait && spec.Target != models.TargetGap {
			return withCode(exitUsage, fmt.Errorf("--target %q: want wait or gap", spec.Target))
		}
	}
	return nil
}

// trainExitErr maps the pipeline's errors to exit codes, with the flags to change.
func trainExitErr(err error) error {
	switch {
	case errors.Is(err, train.ErrNoTrainingChains):
		return withCode(exitUsage, errors.New("no training chains: widen the window (--from/--train-until) or shorten --warmup"))
	case errors.Is(err, dataset.ErrNoInjections):
		return withCode(exitUsage, fmt.Errorf("%w: check --from, --train-until, --until and --warmup", err))
	case errors.Is(err, train.ErrSpec):
		return withCode(exitUsage, err)
	case errors.Is(err, train.ErrInput):
		return withCode(exitBadInput, err)
	case errors.Is(err, train.ErrOutput):
		return withCode(exitUnavailable, err)
	}
	return err
}

// trainNames validates --model and expands nothing but duplicates.
func trainNames(in []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range in {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		if n != train.WaitModel && !models.IsLearned(n) {
			return nil, withCode(exitUsage, fmt.Errorf("--model %q: want rf, rf-golearn, rf-xgb, xgb, dqn, pg or wait", n))
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, withCode(exitUsage, errors.New("--model: nothing to train"))
	}
	return out, nil
}
