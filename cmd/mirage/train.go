package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/sim"
)

// trainOptions are the flags of mirage train: most bind into train.Spec;
// the trace, the cluster and the window bounds are read and parsed here.
type trainOptions struct {
	spec                     train.Spec
	trace, preset, slurmConf string
	from, trainUntil, until  string
	json                     bool
	traceOpts                traceFlags
	progress                 io.Writer // stderr when it is a terminal, else nil
	now                      func() time.Time
}

func newTrainCmd(factory *Factory, runF func(*trainOptions) error) *cobra.Command {
	o := &trainOptions{now: time.Now}
	cmd := &cobra.Command{
		Use: "train --trace FILE --model rf|rf-golearn|rf-xgb|xgb|xgb-online|dqn|pg|wait[,...] --out DIR",
		Example: `  mirage train --trace ls6.log.gz --model xgb-online --train-until 2023-02-01 --until 2023-02-27
  mirage train --trace ls6.log.gz --model xgb,rf --train-until 2023-02-01 --until 2023-02-27
  mirage train --trace ls6.log.gz --model dqn,pg --out ls6-models/ --from 2023-01-03 --train-until 2023-02-01
  mirage train --trace ls6.log.gz --model wait --seed 2 --out ls6-models/`,
		Short: "Train submission policies and the wait predictor in the simulator on a trace",
		Long: `Train learned policies (rf, rf-golearn, rf-xgb, xgb, xgb-online, dqn, pg) and
the wait predictor of mirage predict-wait (wait) on a trace replayed in the
simulator; each model is saved as DIR/NAME/ with meta.json. xgb-online, the
default policy of mirage submit, is xgb with a guard (DIR/xgb-online/guard/)
and thresholds that adapt to the chains' realised hand-offs.

Windows, and what each model learns and how it decides: docs/guide/training-and-evaluation.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.progress = factory.progress()
			o.spec.Out = cmp.Or(o.spec.Out, models.DefaultDir(factory.Getenv))
			if runF != nil {
				return runF(o)
			}
			return runTrain(cmd.Context(), factory.Out, factory.ErrOut, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file (required)")
	f.StringSliceVar(&o.spec.Models, "model", nil, "models to train, comma-separated: rf, rf-golearn, rf-xgb, xgb, xgb-online, dqn, pg, wait (required)")
	f.StringVar(&o.spec.Out, "out", "", "models directory; each model goes to DIR/NAME (default: where submit and the daemon look: "+
		"$MIRAGE_MODELS, else $XDG_DATA_HOME/mirage/models, else ~/.local/share/mirage/models)")
	f.StringVar(&o.preset, "preset", "ls6", "cluster preset: ls6, default (needs --slurm-conf) or a preset file (mirage sim calibrate)")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "read nodes, partitions and scheduler parameters from this slurm.conf")
	f.StringVar(&o.from, "from", "", "first injection: RFC 3339, or YYYY-MM-DD[THH:MM[:SS]] in the trace's zone (default: the trace's first start + --warmup)")
	f.StringVar(&o.trainUntil, "train-until", "", "end of training; start of validation (read as --from)")
	f.StringVar(&o.until, "until", "", "end of validation injections, read as --from (default: the trace's last submit)")
	f.Uint64Var(&o.spec.Seed, "seed", 1, "seed of the simulator's latency draws, load scaling and every fit")
	addProtocolFlags(f, &o.spec.Protocol)
	f.Float64SliceVar(&o.spec.Scales, "scales", []float64{1}, "arrival scalings of the training trace (1 = as recorded), e.g. 1,1.25,1.5")
	f.IntVar(&o.spec.Workers, "workers", 0, "simulator goroutines (default: all cores)")
	f.StringVar(&o.spec.Cache, "cache", "", "directory caching generated datasets")
	f.Float64Var(&o.spec.Cost.InterruptionPerHour, "cost-interruption", scenario.DefaultGapCost.InterruptionPerHour, "cost per hour of interruption")
	f.Float64Var(&o.spec.Cost.OverlapPerHour, "cost-overlap", scenario.DefaultGapCost.OverlapPerHour, "cost per hour of overlap")
	f.Float64Var(&o.spec.Cost.OverlapPerGPUHour, "cost-overlap-gpu", scenario.DefaultGapCost.OverlapPerGPUHour, "cost per GPU-hour of overlap")
	f.StringVar(&o.spec.Workload, "workload", "", "fit the policies for a workload's cost (training or service, over --cost-*) into DIR/NAME@WORKLOAD, which that workload's chains decide with; xgb and xgb-online for training decide by the hand-off rule (docs/guide/training-and-evaluation.md)")
	f.IntVar(&o.spec.DQNSteps, "dqn-steps", 0, "dqn environment steps (default 150000)")
	f.IntVar(&o.spec.PGIterations, "pg-iterations", 0, "pg updates of 16 chains each (default 800)")
	f.StringVar(&o.spec.Target, "target", models.TargetWait, "xgb regression target: wait or gap")
	f.IntVar(&o.spec.WaitReplicas, "wait-replicas", 5, "wait predictor: training replays of the trace, with simulator seeds --seed, --seed+1, …")
	f.BoolVar(&o.spec.WaitRecorded, "wait-recorded", true, "wait predictor: learn the waits the trace recorded (queue features from the replay, history from the trace); =false learns the replay's waits")
	f.BoolVar(&o.json, "json", false, "print the trained models' metadata as JSON")
	o.traceOpts.add(cmd)
	_ = cmd.MarkFlagRequired("trace")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}

func runTrain(ctx context.Context, out, errw io.Writer, o *trainOptions) error {
	spec := o.spec
	var err error
	if spec.Models, err = train.ModelNames(spec.Models); err != nil {
		return trainExitErr(err)
	}
	if err := train.CheckBuild(spec.Models); err != nil { // before the trace is read
		return trainExitErr(err)
	}
	if spec.Cluster, err = simConfig(sim.Options{Preset: o.preset, SlurmConf: o.slurmConf, Latency: -1, Seed: spec.Seed}); err != nil {
		return err
	}
	if spec.Jobs, err = o.traceOpts.read(o.trace); err != nil {
		return err
	}
	spec.TraceName = filepath.Base(o.trace)
	loc := spec.Jobs[0].Submit.Location()
	for _, w := range []struct {
		flag, s string
		t       *time.Time
	}{{"from", o.from, &spec.From}, {"train-until", o.trainUntil, &spec.TrainUntil}, {"until", o.until, &spec.Until}} {
		if *w.t, err = parseWhen(w.flag, w.s, loc); err != nil {
			return err
		}
	}
	if !spec.TrainUntil.IsZero() && !spec.Until.IsZero() && !spec.Until.After(spec.TrainUntil) {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--until %s is not after --train-until %s", o.until, o.trainUntil))
	}
	if err := spec.Validate(); err != nil {
		return trainExitErr(err)
	}
	if err := os.MkdirAll(spec.Out, 0o755); err != nil {
		return cmdutil.WithCode(cmdutil.ExitUnavailable, fmt.Errorf("--out: %w", err))
	}
	spec.Created = o.now().UTC().Truncate(time.Second)
	spec.Report, spec.Progress = errw, train.Bar{Progress: term.NewProgress(o.progress, "")}
	trained, err := train.Run(ctx, spec)
	if err != nil {
		return trainExitErr(err)
	}
	return cmdutil.PrintView(out, o.json, trained, train.Summary(trained))
}

// trainExitErr maps the pipeline's errors to exit codes, with the flags to change.
func trainExitErr(err error) error {
	switch {
	case errors.Is(err, train.ErrNoTrainingChains):
		return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("no training chains: widen the window (--from/--train-until) or shorten --warmup"))
	case errors.Is(err, dataset.ErrNoInjections):
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("%w: check --from, --train-until, --until and --warmup", err))
	}
	return cmdutil.Coded(err, trainCodes)
}

// addProtocolFlags binds the injection protocol's flags (train, eval walk-forward).
func addProtocolFlags(f *pflag.FlagSet, p *scenario.Protocol) {
	f.IntSliceVar(&p.Nodes, "nodes", []int{1, 8}, "chain sizes (nodes per segment)")
	f.DurationVar(&p.Every, "every", 4*time.Hour, "trace time between injections")
	f.DurationVar(&p.WarmUp, "warmup", 48*time.Hour, "warm-up after the trace's first start")
	f.DurationVar(&p.Tick, "cycle", 10*time.Minute, "decision period")
	// The flag's name before train and eval shared their names.
	f.DurationVar(&p.Tick, "tick", 10*time.Minute, "decision period")
	_ = f.MarkDeprecated("tick", "use --cycle (the name mirage eval uses too)")
	f.DurationVar(&p.Limit, "limit", 48*time.Hour, "time limit of the injected segments, used fully")
	f.DurationVar(&p.Lead, "lead", time.Minute, "how long before a predecessor's end the forced (reactive) submission of its successor comes; below --limit (the daemon's --lead on a scaled cluster)")
}
