package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

func init() { register(newTrainCmd) }

// trainOptions are the flags of mirage train.
type trainOptions struct {
	trace        string
	model        []string
	out          string
	preset       string
	slurmConf    string
	from         string
	trainUntil   string
	until        string
	seed         uint64
	waitReplicas int
	nodes        []int
	every        time.Duration
	warmUp       time.Duration
	tick         time.Duration
	limit        time.Duration
	scales       []float64
	workers      int
	cache        string
	costIntr     float64
	costOvl      float64
	costOvlGPU   float64
	dqnSteps     int
	pgIters      int
	target       string
	json         bool
	traceOpts    traceFlags
	progress     io.Writer // stderr when it is a terminal, else nil
	now          func() time.Time
}

func newTrainCmd() *cobra.Command {
	o := &trainOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "train --trace FILE --model rf|rf-golearn|rf-xgb|xgb|dqn|pg|wait[,...] --out DIR",
		Short: "Train submission policies and the wait predictor in the simulator on a trace",
		Long: `Train learned policies on a recorded trace replayed in the simulator: chains are
injected every --every of trace time (the published pair protocol), submitting
each successor is probed every --tick in a fork of the simulator, and each
probe's signed gap (successor start − predecessor end) labels the features of
that instant.

Windows: training uses chains whose every decision falls in [--from,
--train-until); validation injects chains in [--train-until, --until). Times
are RFC 3339, or dates/"YYYY-MM-DDTHH:MM" in the trace's own zone.

Models (each saved as DIR/NAME/ with meta.json):
  xgb         gradient-boosted trees predicting the successor's wait
  rf          the default random forest (golearn's; fits not reproducible)
  rf-golearn  golearn's random forest explicitly (20,000-row sample)
  rf-xgb      XGBoost's random-forest mode (reproducible for a seed)
  dqn, pg     Deep Q-Network and REINFORCE on the probed chains
  wait        the wait predictor of mirage predict-wait

--cache DIR keeps the generated datasets for later runs. Datasets use all cores
(--workers) and are deterministic for --seed.

What each model learns and how it decides: docs/guide/training-and-evaluation.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 && cmd.ErrOrStderr() == os.Stderr {
				o.progress = cmd.ErrOrStderr()
			}
			return runTrain(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file (required)")
	f.StringSliceVar(&o.model, "model", nil, "models to train, comma-separated: rf, rf-golearn, rf-xgb, xgb, dqn, pg, wait (required)")
	f.StringVar(&o.out, "out", "", "models directory; each model goes to DIR/NAME (required)")
	f.StringVar(&o.preset, "preset", "ls6", "cluster preset: ls6 or default (needs --slurm-conf)")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "read nodes, partitions and scheduler parameters from this slurm.conf")
	f.StringVar(&o.from, "from", "", "first injection (default: the trace's first start + --warmup)")
	f.StringVar(&o.trainUntil, "train-until", "", "end of training; start of validation")
	f.StringVar(&o.until, "until", "", "end of validation injections (default: the trace's last submit)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the simulator's latency draws, load scaling and every fit")
	f.IntSliceVar(&o.nodes, "nodes", []int{1, 8}, "chain sizes (nodes per segment)")
	f.DurationVar(&o.every, "every", 4*time.Hour, "trace time between injections")
	f.DurationVar(&o.warmUp, "warmup", 48*time.Hour, "warm-up after the trace's first start")
	f.DurationVar(&o.tick, "tick", 10*time.Minute, "decision interval")
	f.DurationVar(&o.limit, "limit", 48*time.Hour, "time limit of the injected segments, used fully")
	f.Float64SliceVar(&o.scales, "scales", []float64{1}, "arrival scalings of the training trace (1 = as recorded), e.g. 1,1.25,1.5")
	f.IntVar(&o.workers, "workers", 0, "simulator goroutines (default: all cores)")
	f.StringVar(&o.cache, "cache", "", "directory caching generated datasets")
	f.Float64Var(&o.costIntr, "cost-interruption", models.DefaultGapCost.InterruptionPerHour, "cost per hour of interruption")
	f.Float64Var(&o.costOvl, "cost-overlap", models.DefaultGapCost.OverlapPerHour, "cost per hour of overlap")
	f.Float64Var(&o.costOvlGPU, "cost-overlap-gpu", models.DefaultGapCost.OverlapPerGPUHour, "cost per GPU-hour of overlap")
	f.IntVar(&o.dqnSteps, "dqn-steps", 0, "dqn environment steps (default 150000)")
	f.IntVar(&o.pgIters, "pg-iterations", 0, "pg updates of 16 chains each (default 800)")
	f.StringVar(&o.target, "target", models.TargetWait, "xgb regression target: wait or gap")
	f.IntVar(&o.waitReplicas, "wait-replicas", 5, "wait predictor: training replays of the trace, with simulator seeds --seed, --seed+1, …")
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

// countBar draws a one-line progress bar of done/total on a terminal.
type countBar struct {
	w       io.Writer
	label   string
	lastPct int
	drawn   bool
}

func newCountBar(w io.Writer, label string) *countBar {
	return &countBar{w: w, label: label, lastPct: -1}
}

func (b *countBar) update(done, total int) {
	if b == nil || b.w == nil || total <= 0 {
		return
	}
	pct := min(100*done/total, 100)
	if pct == b.lastPct {
		return
	}
	b.lastPct, b.drawn = pct, true
	n := pct / 4
	fmt.Fprintf(b.w, "\r[%s%s] %3d%% %s (%d/%d)\033[K", strings.Repeat("#", n), strings.Repeat(".", 25-n), pct, b.label, done, total)
}

func (b *countBar) done() {
	if b != nil && b.w != nil && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

// trainRun holds what the models of one run share.
type trainRun struct {
	o        *trainOptions
	errw     io.Writer
	cfg      sim.Config
	sc       *models.Scenario
	proto    models.Protocol
	from     time.Time
	tu       time.Time
	until    time.Time
	traceKey string
	log      *slog.Logger

	trainCache, validCache *models.ChainData // policy datasets, generated once per run
}

func runTrain(ctx context.Context, out, errw io.Writer, o *trainOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	names, err := trainNames(o.model)
	if err != nil {
		return err
	}
	so := &simOptions{preset: o.preset, slurmConf: o.slurmConf, latency: -1, seed: o.seed}
	cfg, err := so.config()
	if err != nil {
		return err
	}
	jobs, err := loadTrace(o.trace, o.traceOpts)
	if err != nil {
		return err
	}
	loc := jobs[0].Submit.Location()
	r := &trainRun{o: o, errw: errw, cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if r.from, err = parseWhen("from", o.from, loc); err != nil {
		return err
	}
	if r.tu, err = parseWhen("train-until", o.trainUntil, loc); err != nil {
		return err
	}
	if r.until, err = parseWhen("until", o.until, loc); err != nil {
		return err
	}
	if !r.tu.IsZero() && !r.until.IsZero() && !r.until.After(r.tu) {
		return withCode(exitUsage, fmt.Errorf("--until %s is not after --train-until %s", o.until, o.trainUntil))
	}
	if o.waitReplicas < 1 || o.waitReplicas > 64 {
		return withCode(exitUsage, fmt.Errorf("--wait-replicas %d: want 1–64", o.waitReplicas))
	}
	for _, s := range o.scales {
		if s < 1 || s > 16 {
			return withCode(exitUsage, fmt.Errorf("--scales: %v outside [1, 16]", s))
		}
	}
	r.proto = models.Protocol{Every: o.every, WarmUp: o.warmUp, Tick: o.tick, Limit: o.limit, Nodes: o.nodes}.WithDefaults(cfg)
	if err := r.proto.Validate(); err != nil {
		return withCode(exitUsage, err)
	}
	if r.sc, err = models.NewScenario(filepath.Base(o.trace), jobs, cfg); err != nil {
		return withCode(exitBadInput, err)
	}
	if st, err := os.Stat(o.trace); err == nil {
		r.traceKey = fmt.Sprintf("%s|%d|%d", filepath.Base(o.trace), st.Size(), st.ModTime().Unix())
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return withCode(exitUnavailable, fmt.Errorf("--out: %w", err))
	}
	windows := models.Windows{TrainFrom: r.from, TrainUntil: r.tu}
	if !r.tu.IsZero() {
		windows.ValidFrom, windows.ValidUntil = r.tu, r.until
		if windows.ValidUntil.IsZero() {
			windows.ValidUntil = r.sc.Last
		}
	} else {
		windows.TrainUntil = r.until
	}
	meta := models.Meta{Trace: r.sc.Name, Windows: windows, Created: o.now().UTC().Truncate(time.Second)}
	var trained []trainedModel
	for _, name := range names {
		if name == "wait" {
			tm, err := r.trainWait(ctx, meta)
			if err != nil {
				return err
			}
			trained = append(trained, tm)
			continue
		}
		tm, err := r.trainPolicy(ctx, name, meta)
		if err != nil {
			return err
		}
		trained = append(trained, tm)
	}
	return printTrained(out, o.json, trained)
}

// trainedModel is one model written by a run.
type trainedModel struct {
	Name string      `json:"name"`
	Dir  string      `json:"dir"`
	Meta models.Meta `json:"meta"`
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
		if n != "wait" && !models.IsLearned(n) {
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

// cachePath names a cached dataset by everything that determines it.
func (r *trainRun) cachePath(kind string, parts ...any) string {
	if r.o.cache == "" || r.traceKey == "" {
		return ""
	}
	cb, _ := json.Marshal(r.cfg)
	pb, _ := json.Marshal(r.proto)
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%s|%s|%d|%v", kind, r.traceKey, cb, pb, models.FeatureSchemaVersion, parts)
	return filepath.Join(r.o.cache, kind+"-"+hex.EncodeToString(h.Sum(nil)[:8])+".gob.gz")
}

// chainData generates (or reads from the cache) one chain dataset.
func (r *trainRun) chainData(ctx context.Context, label string, sc *models.Scenario, g models.GenOptions) (*models.ChainData, error) {
	path := r.cachePath("chain", sc.Name, sc.Scale, g.From.Unix(), g.Until.Unix(), g.EndBy.Unix(), r.o.seed)
	if path != "" {
		if d, err := models.LoadChainData(path); err == nil && models.CheckSchema(d.Schema, models.Schema()) == nil {
			return d, nil
		}
	}
	bar := newCountBar(r.o.progress, "dataset "+label)
	g.Progress, g.Workers = bar.update, r.o.workers
	g.Log = func(msg string, kv ...any) { r.log.Info(msg, kv...) }
	d, err := models.GenerateChainData(ctx, sc, g)
	bar.done()
	if errors.Is(err, models.ErrNoInjections) {
		return nil, withCode(exitUsage, fmt.Errorf("dataset %s: %w: check --from, --train-until, --until and --warmup", label, err))
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", label, err)
	}
	fmt.Fprintf(r.errw, "dataset %s: %d chains (%d skipped, %d dropped), %d probes in %.0f s (%.0f probes/s)\n",
		label, len(d.Episodes), d.Skipped, d.Dropped, d.Probes, d.Seconds, float64(d.Probes)/max(d.Seconds, 1e-9))
	if path != "" {
		if err := os.MkdirAll(r.o.cache, 0o700); err != nil {
			return nil, fmt.Errorf("--cache: %w", err)
		}
		if err := models.SaveChainData(path, d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// trainPolicy builds the chain datasets (cached within the run) and trains one policy.
func (r *trainRun) trainPolicy(ctx context.Context, name string, meta models.Meta) (trainedModel, error) {
	train, valid, err := r.policyData(ctx)
	if err != nil {
		return trainedModel{}, err
	}
	bar := newCountBar(r.o.progress, "train "+name)
	po := models.PolicyTrainOptions{Seed: r.o.seed, Meta: meta, Target: r.o.target, Protocol: r.proto,
		Cost: models.GapCost{InterruptionPerHour: r.o.costIntr, OverlapPerHour: r.o.costOvl, OverlapPerGPUHour: r.o.costOvlGPU},
		RL:   models.RLOptions{Steps: r.o.dqnSteps, Iterations: r.o.pgIters},
		Progress: func(stage string, done, total int) {
			bar.label = "train " + name + ": " + stage
			bar.update(done, total)
		}}
	if po.Target != models.TargetWait && po.Target != models.TargetGap {
		return trainedModel{}, withCode(exitUsage, fmt.Errorf("--target %q: want wait or gap", po.Target))
	}
	m, err := models.TrainPolicy(name, train, valid, po)
	bar.done()
	if err != nil {
		return trainedModel{}, fmt.Errorf("train %s: %w", name, err)
	}
	dir := filepath.Join(r.o.out, name)
	if err := models.Save(dir, m); err != nil {
		return trainedModel{}, withCode(exitUnavailable, err)
	}
	return trainedModel{Name: name, Dir: dir, Meta: m.Meta()}, nil
}

// errNoTrainingChains: the window holds no complete training chain.
var errNoTrainingChains = errors.New("no training chains: widen the window (--from/--train-until) or shorten --warmup")

func (r *trainRun) policyData(ctx context.Context) (*models.ChainData, *models.ChainData, error) {
	if r.trainCache != nil {
		return r.trainCache, r.validCache, nil
	}
	end := r.tu
	if end.IsZero() {
		end = r.until
	}
	g := models.GenOptions{Protocol: r.proto, From: r.from}
	if !end.IsZero() {
		// every decision of a training chain precedes the end of training
		g.Until, g.EndBy = end.Add(-r.proto.Limit+1), end
	}
	var train *models.ChainData
	for _, s := range r.o.scales {
		sc, err := r.sc.Scaled(s, r.o.seed, 0)
		if err != nil {
			return nil, nil, withCode(exitUsage, err)
		}
		d, err := r.chainData(ctx, "train ×"+strconv.FormatFloat(s, 'g', -1, 64), sc, g)
		if err != nil {
			return nil, nil, err
		}
		if train == nil {
			train = d
		} else {
			train.Episodes = append(train.Episodes, d.Episodes...)
			train.Probes += d.Probes
		}
	}
	if len(train.Episodes) < 2 {
		return nil, nil, withCode(exitUsage, errNoTrainingChains)
	}
	var valid *models.ChainData
	if !r.tu.IsZero() {
		d, err := r.chainData(ctx, "validation", r.sc, models.GenOptions{Protocol: r.proto, From: r.tu, Until: r.until})
		if err != nil {
			return nil, nil, err
		}
		valid = d
	}
	r.trainCache, r.validCache = train, valid
	return train, valid, nil
}

// trainWait generates the wait datasets and trains the predictor.
func (r *trainRun) trainWait(ctx context.Context, meta models.Meta) (trainedModel, error) {
	end := r.tu
	if end.IsZero() {
		end = r.until
	}
	gen := func(label string, o models.WaitGenOptions, replicas int) (*models.WaitData, error) {
		bar := newCountBar(r.o.progress, "wait dataset "+label)
		o.Progress = bar.update
		d, err := models.GenerateWaitReplicas(ctx, r.sc, o, replicas, r.o.workers)
		bar.done()
		if err != nil {
			return nil, fmt.Errorf("wait dataset %s: %w", label, err)
		}
		fmt.Fprintf(r.errw, "wait dataset %s: %d jobs in %.0f s\n", label, len(d.Samples), d.Seconds)
		return d, nil
	}
	train, err := gen("train", models.WaitGenOptions{From: r.from, Until: end}, r.o.waitReplicas)
	if err != nil {
		return trainedModel{}, err
	}
	var valid *models.WaitData
	if !r.tu.IsZero() {
		if valid, err = gen("validation", models.WaitGenOptions{From: r.tu, Until: r.until, Estimates: true}, 1); err != nil {
			return trainedModel{}, err
		}
	}
	bar := newCountBar(r.o.progress, "train wait")
	w, rep, err := models.TrainWaitPredictor(train, valid, models.WaitTrainOptions{Seed: r.o.seed, Meta: meta,
		Progress: func(stage string, done, total int) { bar.label = "train " + stage; bar.update(done, total) }})
	bar.done()
	if err != nil {
		return trainedModel{}, fmt.Errorf("train wait: %w", err)
	}
	dir := filepath.Join(r.o.out, "wait")
	if err := models.SaveWaitPredictor(dir, w); err != nil {
		return trainedModel{}, withCode(exitUnavailable, err)
	}
	if rep != nil {
		fmt.Fprintf(r.errw, "wait predictor on validation: median |error| %s (Slurm's estimate on the same %d jobs: %s)\n",
			durS(rep.Estimated.MedianAbsErr), rep.Estimated.N, durS(rep.Slurm.MedianAbsErr))
	}
	return trainedModel{Name: "wait", Dir: dir, Meta: w.Models[1].Meta()}, nil
}

func durS(sec float64) string {
	return (time.Duration(sec * float64(time.Second))).Round(time.Second).String()
}

// printTrained writes the run's summary: a table, or the metadata as JSON.
func printTrained(w io.Writer, asJSON bool, ms []trainedModel) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ms)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tROWS\tFIT\tVALIDATION\tDIR")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1fs\t%s\t%s\n", m.Name, m.Meta.Kind, m.Meta.TrainRows, m.Meta.TrainSeconds, headline(m.Name, m.Meta), m.Dir)
	}
	return tw.Flush()
}

// headline is a model's key validation figure for tables.
func headline(name string, meta models.Meta) string {
	mt := meta.Metrics
	if _, ok := mt["valid_slurm_median_abs_err_s"]; ok {
		return fmt.Sprintf("median |err| %s (Slurm %s)", durS(mt["valid_estimated_median_abs_err_s"]), durS(mt["valid_slurm_median_abs_err_s"]))
	}
	if v, ok := mt["valid_mean_abs_gap_h"]; ok {
		return fmt.Sprintf("mean |gap| %.2f h (reactive %.2f h)", v, mt["valid_reactive_mean_abs_gap_h"])
	}
	if v, ok := mt["calib_mean_abs_gap_h"]; ok {
		return fmt.Sprintf("calibration mean |gap| %.2f h", v)
	}
	keys := make([]string, 0, len(mt))
	for k := range mt {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		return fmt.Sprintf("%s %.3g", keys[0], mt[keys[0]])
	}
	return "-"
}
