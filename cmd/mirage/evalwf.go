package main

import (
	"cmp"
	"context"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/sim"
)

// evalWFOptions are the flags of mirage eval walk-forward.
type evalWFOptions struct {
	f                        *Factory
	trace, preset, slurmConf string
	months                   []string
	until, cache             string
	policies, baselines      []string
	replayed                 []string
	seed                     uint64
	retrain                  time.Duration
	workers                  int
	protocol                 scenario.Protocol
	json                     bool
	traceOpts                traceFlags
}

func newEvalWalkForwardCmd(f *Factory, runF func(*evalWFOptions) error) *cobra.Command {
	o := &evalWFOptions{f: f}
	cmd := &cobra.Command{
		Use:   "walk-forward --trace FILE --months START[,START...] --until END",
		Short: "Score the learned policies period by period, each trained only on what came before",
		Long: `Score each period [START, next START or --until) of a trace with policies trained
only on chains whose outcomes were all known before (refitted every --retrain inside
the period; thresholds chosen on the latest 20% of the chains), and the baselines
replayed on the same chains (with --replayed, learned policies run as the daemon runs
them, such as the pinned default of mirage submit on Slurm), pooled per load class with
paired bootstrap intervals against reactive;
the last line names the best policy, and the best one mirage submit can run.
Method and policies: docs/guide/training-and-evaluation.md.`,
		Example: `  mirage eval walk-forward --trace ls6.log.gz --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-27
  mirage eval walk-forward --trace ls6.log.gz --months 2023-01-01,2023-02-01 --until 2023-02-27 --policies xgb,xgb-noharm --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return evalWalkForward(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.trace, "trace", "", "trace file (required)")
	fl.StringSliceVar(&o.months, "months", nil, "start of each scored period, read as train's --from (required)")
	fl.StringVar(&o.until, "until", "", "end of the last period (default: the trace's last submit)")
	fl.StringSliceVar(&o.policies, "policies", []string{"xgb", "rf-xgb", "xgb-noharm", train.OnlinePolicyName, train.ImitationPolicyName}, "policies to score besides reactive and the oracle")
	fl.DurationVar(&o.retrain, "retrain", 7*24*time.Hour, "refit the learned policies this often inside a period, on the chains known by then, as a cron retrain does (0: once per period)")
	fl.StringSliceVar(&o.replayed, "replayed", []string{models.DefaultPinned}, "learned policies (or their pinned forms, NAME"+models.PinSuffix+") replayed as the daemon runs them, each period with a model fitted once at its start (\"\": none)")
	fl.StringSliceVar(&o.baselines, "baselines", protocol.WFBaselines, "policies without training to score too, replayed on the same chains (\"\": none)")
	fl.StringVar(&o.cache, "cache", "", "chain table cache, by injection day (default: $XDG_CACHE_HOME/mirage/datasets; \"-\": none)")
	fl.StringVar(&o.preset, "preset", "ls6", "cluster preset: ls6, default (needs --slurm-conf) or a preset file (mirage sim calibrate)")
	fl.StringVar(&o.slurmConf, "slurm-conf", "", "read nodes, partitions and scheduler parameters from this slurm.conf")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the simulator and of every fit")
	fl.IntVar(&o.workers, "workers", 0, "simulator goroutines (default: all cores)")
	addProtocolFlags(fl, &o.protocol)
	fl.BoolVar(&o.json, "json", false, "print the folds, the rows and the pick as JSON")
	o.traceOpts.add(cmd)
	_ = cmd.MarkFlagRequired("trace")
	_ = cmd.MarkFlagRequired("months")
	return cmd
}

func evalWalkForward(ctx context.Context, o *evalWFOptions) error {
	cl, err := simConfig(sim.Options{Preset: o.preset, SlurmConf: o.slurmConf, Latency: -1, Seed: o.seed})
	if err != nil {
		return err
	}
	jobs, err := o.traceOpts.read(o.trace)
	if err != nil {
		return err
	}
	loc := jobs[0].Submit.Location()
	s := protocol.WFSpec{Jobs: jobs, TraceName: filepath.Base(o.trace), Cluster: cl, Policies: o.policies, Seed: o.seed, Workers: o.workers, Protocol: o.protocol,
		Baselines: o.baselines, Replayed: o.replayed, Retrain: o.retrain,
		Progress: train.Bar{Progress: term.NewProgress(o.f.progress(), "")}}
	for _, m := range append(o.months, cmp.Or(o.until, jobs[len(jobs)-1].Submit.Format("2006-01-02T15:04:05Z07:00"))) {
		t, err := parseWhen("months", m, loc)
		if err != nil {
			return err
		}
		s.Bounds = append(s.Bounds, t)
	}
	if s.Cache = o.cache; o.cache == "" {
		s.Cache = dataset.DefaultCacheDir()
	} else if o.cache == "-" {
		s.Cache = ""
	}
	res, err := protocol.RunWalkForward(ctx, s)
	if err != nil {
		return trainExitErr(err)
	}
	if o.json {
		return cmdutil.PrintJSON(o.f.Out, res)
	}
	return res.WriteText(o.f.Out)
}
