package eval

import "github.com/mirage-gpu/mirage/eval/protocol"

import "github.com/spf13/pflag"

// AddFlags binds the experiment's flags (those of `mirage eval`) to s, with
// their defaults; the command adds its own (workers, output format).
func (s *Spec) AddFlags(fl *pflag.FlagSet) {
	fl.StringSliceVar(&s.Traces, "trace", nil, "trace file (repeatable or comma-separated)")
	fl.StringVar(&s.Format, "format", "", "trace format (default: sniffed)")
	fl.BoolVar(&s.SkipBad, "skip-bad", false, "skip malformed trace rows, counting them in the report's provenance, instead of failing")
	fl.StringSliceVar(&s.Policies, "policies", nil, "policies, in report order (reactive is always run as the reference)")
	fl.StringVar(&s.Models, "models", "", "directory of trained models, one sub-directory per learned policy (mirage train --out)")
	fl.StringVar(&s.From, "from", "", "first injection not before: RFC 3339, or YYYY-MM-DD[THH:MM[:SS]] in the trace's zone (default and earliest: the trace's first start + --warmup)")
	fl.StringVar(&s.Until, "until", "", "injections before: RFC 3339, or YYYY-MM-DD[THH:MM[:SS]] in the trace's zone (default: the trace's last submit)")
	fl.IntSliceVar(&s.Nodes, "nodes", []int{1, 8}, "nodes per segment")
	fl.DurationVar(&s.Limit, "limit", protocol.DefaultLimit, "time limit of every segment (used fully)")
	fl.DurationVar(&s.Warmup, "warmup", protocol.DefaultWarmup, "no injection before the trace's first start + this")
	fl.DurationVar(&s.Interval, "every", protocol.DefaultInterval, "trace time between injections")
	fl.DurationVar(&s.Cycle, "cycle", protocol.DefaultCycle, "decision period")
	// The flag's name before train and eval shared their names.
	fl.DurationVar(&s.Interval, "interval", protocol.DefaultInterval, "trace time between injections")
	_ = fl.MarkDeprecated("interval", "use --every (the name mirage train uses too)")
	fl.DurationVar(&s.Horizon, "horizon", protocol.DefaultHorizon, "a successor not started this long after its predecessor's end (pair) or the chain's K limits (chain-K) is cut off (censored); run: the work plus twice this")
	fl.DurationVar(&s.HandOff, "handoff", 0, "chain-K: a successor starting while its predecessor runs makes it checkpoint and exit this long after (mirage handoff); 0: off")
	fl.DurationVar(&s.Work, "work", 0, "run: useful work per chain (default 168h)")
	fl.DurationVar(&s.Restart, "restart", 0, "run: restart time of every segment (default 5m)")
	fl.DurationVar(&s.Checkpoint, "checkpoint", 0, "run: checkpoint time, at the limit and on a hand-off (default 5m)")
	fl.BoolVar(&s.NoHandOff, "no-handoff", false, "run: successors do not hand off (an early start holds GPUs idle)")
	fl.StringVar(&s.Workload, "workload", "", "chain-K and run: training or service, whose cost the oracle plans for and learned policies decide with (default: the published symmetric cost; run: training)")
	fl.Float64SliceVar(&s.LoadScales, "load-scale", []float64{1}, "arrival scalings: <1 thins, >1 replicates (seeded)")
	fl.StringVar(&s.Protocol, "protocol", "pair", "pair, chain-K (K ≥ 2 segments, each its full limit) or run (whole work-conserving runs)")
	fl.StringVar(&s.Preset, "preset", "ls6", "simulated cluster preset: ls6, default or a preset file (mirage sim calibrate)")
	fl.StringVar(&s.SlurmConf, "slurm-conf", "", "read the simulated cluster from this slurm.conf (over the preset)")
	fl.Uint64Var(&s.Seed, "seed", 1, "seed of load scaling and of the bootstrap")
	fl.StringVar(&s.Title, "title", "", "report title")
	fl.StringVar(&s.Out, "out", "", "output directory (required without --sweep; a sweep's default is its out:)")
	fl.StringVar(&s.Sweep, "sweep", "", "run the experiment of this sweep file (YAML)")
	fl.IntVar(&s.Cell, "cell", -1, "with --sweep: run only this cell (the job-array task id)")
	fl.BoolVar(&s.EmitArray, "emit-array", false, "with --sweep: write the sbatch job-array script instead of running")
}
