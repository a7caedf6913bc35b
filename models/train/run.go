package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// WaitModel is the name Run trains the wait predictor under (beside the
// learned policies' names).
const WaitModel = "wait"

// Spec is one training run, what `mirage train` binds its flags into: the
// trace and cluster, the windows, the protocol of the injected chains and
// the models to train.
type Spec struct {
	Jobs      []traces.Job // the recorded trace
	TraceName string       // recorded in meta.json and in the scenario's name (the file's base name)
	Cluster   sim.Config   // simulated cluster; its Seed seeds the simulator

	Models []string // learned policies (models.IsLearned) and/or WaitModel, trained in this order
	Out    string   // models directory: each model is saved to Out/NAME

	From       time.Time // first injection (zero: the trace's first start + warm-up)
	TrainUntil time.Time // end of training, start of validation (zero: everything is training)
	Until      time.Time // end of validation injections (zero: the trace's last submit)

	Protocol     scenario.Protocol // injection cadence, tick, limit and chain sizes (zero fields: defaults)
	Scales       []float64         // arrival scalings of the training trace, each in [1, 16] (empty: 1)
	Seed         uint64            // seed of load scaling and every fit
	WaitReplicas int               // training replays for the wait predictor, 1–64
	// WaitRecorded trains (and validates) the wait predictor on the waits
	// the trace recorded instead of the replay's: the queue features still
	// come from the replayed cluster, the history features from the
	// recorded jobs (what sacct showed then), labels from what really
	// happened (RelabelRecorded).
	WaitRecorded bool
	Workers      int    // simulator goroutines (0: all cores)
	Cache        string // directory caching generated chain datasets by injection day, checked against the trace's jobs ("": none)

	Cost scenario.GapCost // tuning objective and RL reward
	// Workload, when set, fits the policies for that workload's cost
	// (provisioner.WorkloadCost, instead of Cost) into Out/NAME@WORKLOAD,
	// which a chain of the workload then decides with (models.PolicyFactory).
	Workload     string
	DQNSteps     int    // dqn environment steps (0: default)
	PGIterations int    // pg updates (0: default)
	Target       string // xgb regression target: models.TargetWait or models.TargetGap

	Created  time.Time    // recorded in meta.json
	Report   io.Writer    // one line per generated dataset and the wait predictor's validation (nil: none)
	Progress Progress     // progress of each stage (nil: none)
	Log      *slog.Logger // skipped injections (nil: none)
}

// Progress shows how far a stage has come; a stage ends with Done.
type Progress interface {
	Update(label string, done, total int)
	Done()
}

// Trained is one model written by Run.
type Trained struct {
	Name string      `json:"name"`
	Dir  string      `json:"dir"`
	Meta models.Meta `json:"meta"`
}

// Errors of Run a caller maps to its own codes; the messages are those of
// the underlying errors.
var (
	// ErrSpec: the spec cannot be run (bad value, empty window, no training chain).
	ErrSpec = errors.New("invalid training spec")
	// ErrInput: the trace cannot be replayed on the cluster.
	ErrInput = errors.New("unusable trace")
	// ErrOutput: the models directory or a model could not be written.
	ErrOutput = errors.New("cannot write the output")
	// ErrNoTrainingChains: the training window holds fewer than two complete chains (with ErrSpec).
	ErrNoTrainingChains = errors.New("no training chains: widen the training window or shorten the warm-up")
)

// marked is err, also matching kind under errors.Is, with err's message.
type marked struct{ err, kind error }

func (e marked) Error() string   { return e.err.Error() }
func (e marked) Unwrap() []error { return []error{e.err, e.kind} }

func mark(kind, err error) error {
	if err == nil {
		return nil
	}
	return marked{err: err, kind: kind}
}

// ModelNames cleans a list of model names as given to `mirage train
// --model`: blanks trimmed, empty names and repeats dropped. An unknown
// name, or nothing left, is an error wrapping ErrSpec.
func ModelNames(in []string) ([]string, error) {
	var out []string
	for _, n := range in {
		n = strings.TrimSpace(n)
		if n == "" || slices.Contains(out, n) {
			continue
		}
		if err := checkModel(n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, mark(ErrSpec, errors.New("--model: nothing to train"))
	}
	return out, nil
}

func checkModel(n string) error {
	if n != WaitModel && !models.IsLearned(n) {
		return mark(ErrSpec, fmt.Errorf("--model %q: want rf, rf-golearn, rf-xgb, xgb, xgb-online, dqn, pg or wait", n))
	}
	return nil
}

// needsLibXGBoost are the models whose training calls libxgboost.
var needsLibXGBoost = []string{string(models.KindXGB), models.PolicyXGBOnline, string(models.KindRFXGB), WaitModel}

// CheckBuild reports, before any work, a model this build cannot train:
// one that needs libxgboost in a build without it (an error wrapping
// xgb.ErrNoXGBoost and ErrSpec). Run calls it through Validate; a command
// calls it first, so that the answer comes before the trace is read.
func CheckBuild(names []string) error {
	if xgb.CanTrain {
		return nil
	}
	for _, n := range names {
		if slices.Contains(needsLibXGBoost, n) {
			return mark(ErrSpec, fmt.Errorf("--model %s: %w; rf (golearn), dqn and pg train without it", n, xgb.ErrNoXGBoost))
		}
	}
	return nil
}

// Validate reports values Run cannot work with (wrapping ErrSpec), naming
// the flags of `mirage train` that set them.
func (s *Spec) Validate() error {
	if len(s.Models) == 0 {
		return mark(ErrSpec, errors.New("--model: nothing to train"))
	}
	for _, n := range s.Models {
		if err := checkModel(n); err != nil {
			return err
		}
	}
	if err := CheckBuild(s.Models); err != nil {
		return err
	}
	if !s.TrainUntil.IsZero() && !s.Until.IsZero() && !s.Until.After(s.TrainUntil) {
		return mark(ErrSpec, fmt.Errorf("--until %s is not after --train-until %s", s.Until.Format(time.RFC3339), s.TrainUntil.Format(time.RFC3339)))
	}
	if s.Workload != "" {
		if _, err := provisioner.WorkloadCost(s.Workload); err != nil {
			return mark(ErrSpec, fmt.Errorf("--workload: %w", err))
		}
	}
	if s.WaitReplicas < 1 || s.WaitReplicas > 64 {
		return mark(ErrSpec, fmt.Errorf("--wait-replicas %d: want 1–64", s.WaitReplicas))
	}
	for _, sc := range s.Scales {
		if sc < 1 || sc > 16 {
			return mark(ErrSpec, fmt.Errorf("--scales: %v outside [1, 16]", sc))
		}
	}
	if slices.ContainsFunc(s.Models, func(n string) bool { return n != WaitModel }) && s.Target != models.TargetWait && s.Target != models.TargetGap {
		return mark(ErrSpec, fmt.Errorf("--target %q: want wait or gap", s.Target))
	}
	return nil
}

// run holds what the models of one Run share.
type run struct {
	s     *Spec
	sc    *scenario.Scenario
	proto scenario.Protocol

	trainCache, validCache *dataset.ChainData // policy datasets, generated once per run
}

// Run trains every model of the spec and saves each to Out/NAME:
//
//  1. The spec is checked and the trace becomes a scenario on the cluster.
//  2. The windows are recorded in every model's meta.json: training is
//     [From, TrainUntil) and validation [TrainUntil, Until), or everything
//     up to Until is training without TrainUntil.
//  3. For the policies, the chain datasets are generated once (training
//     chains end by the end of training; one dataset per arrival scale,
//     merged; validation chains from TrainUntil) or read from the cache,
//     and each policy is trained on them (TrainPolicy).
//  4. For the wait predictor, WaitReplicas replays of the training window
//     and one of the validation window (with Slurm's estimates) are
//     generated and the quantiles fitted (TrainWaitPredictor).
func Run(ctx context.Context, s Spec) ([]Trained, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(s.Scales) == 0 {
		s.Scales = []float64{1}
	}
	if s.Target == "" {
		s.Target = models.TargetWait
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	r := &run{s: &s}
	r.proto = s.Protocol.WithDefaults(s.Cluster)
	if err := r.proto.Validate(); err != nil {
		return nil, mark(ErrSpec, err)
	}
	var err error
	if r.sc, err = scenario.NewScenario(s.TraceName, s.Jobs, s.Cluster); err != nil {
		return nil, mark(ErrInput, err)
	}
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return nil, mark(ErrOutput, fmt.Errorf("models directory: %w", err))
	}
	windows := models.Windows{TrainFrom: s.From, TrainUntil: s.TrainUntil}
	if !s.TrainUntil.IsZero() {
		windows.ValidFrom, windows.ValidUntil = s.TrainUntil, s.Until
		if windows.ValidUntil.IsZero() {
			windows.ValidUntil = r.sc.Last
		}
	} else {
		windows.TrainUntil = s.Until
	}
	meta := models.Meta{Trace: r.sc.Name, Windows: windows, Created: s.Created, Cluster: clusterShape(s.Cluster)}
	var trained []Trained
	for _, name := range s.Models {
		var tm Trained
		if name == WaitModel {
			tm, err = r.trainWait(ctx, meta)
		} else {
			tm, err = r.trainPolicy(ctx, name, meta)
		}
		if err != nil {
			return nil, err
		}
		trained = append(trained, tm)
	}
	return trained, nil
}

func (r *run) update(label string, done, total int) {
	if r.s.Progress != nil {
		r.s.Progress.Update(label, done, total)
	}
}

func (r *run) done() {
	if r.s.Progress != nil {
		r.s.Progress.Done()
	}
}

func (r *run) report(format string, args ...any) {
	if r.s.Report != nil {
		fmt.Fprintf(r.s.Report, format, args...)
	}
}

// clusterShape is the shape of the simulated cluster, as model metadata records it.
func clusterShape(cfg sim.Config) *models.ClusterShape {
	s := models.ClusterShape{Nodes: len(cfg.Nodes)}
	for _, n := range cfg.Nodes {
		s.GPUsPerNode = max(s.GPUsPerNode, n.GPUs)
	}
	return &s
}

// trainEnd is the end of training: TrainUntil, or Until without it.
func (r *run) trainEnd() time.Time {
	if r.s.TrainUntil.IsZero() {
		return r.s.Until
	}
	return r.s.TrainUntil
}

// DayCache is the per-day chain dataset cache in dir, keyed on everything
// besides the trace that the episodes depend on (train and the walk-forward,
// eval/protocol's RunWalkForward and FitFolds, share its files).
func DayCache(dir string, cluster sim.Config, proto scenario.Protocol, scale float64, seed uint64) dataset.DayCache {
	cb, _ := json.Marshal(cluster)
	pb, _ := json.Marshal(proto)
	return dataset.DayCache{Dir: dir, Key: fmt.Sprintf("%s|%s|%g|%d", cb, pb, scale, seed)}
}

// chainData generates one chain dataset, through the per-day cache when
// the run has one (dataset.DayCache: a window that moved by a night probes
// only the new days).
func (r *run) chainData(ctx context.Context, label string, sc *scenario.Scenario, g dataset.GenOptions) (*dataset.ChainData, error) {
	g.Progress = func(done, total int) { r.update("dataset "+label, done, total) }
	g.Workers = r.s.Workers
	if r.s.Log != nil {
		g.Log = func(msg string, kv ...any) { r.s.Log.Info(msg, kv...) }
	}
	var (
		d   *dataset.ChainData
		st  dataset.DayStats
		err error
	)
	if r.s.Cache != "" {
		d, st, err = DayCache(r.s.Cache, r.s.Cluster, r.proto, sc.Scale, r.s.Seed).Generate(ctx, sc, g)
	} else {
		d, err = dataset.GenerateChainData(ctx, sc, g)
	}
	r.done()
	if errors.Is(err, dataset.ErrNoInjections) {
		return nil, mark(ErrSpec, fmt.Errorf("dataset %s: %w", label, err))
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", label, err)
	}
	cached := ""
	if st.Days > 0 {
		cached = fmt.Sprintf("; %d of %d injection days from the cache", st.Cached, st.Days)
	}
	r.report("dataset %s: %d chains (%d skipped, %d dropped), %d probes in %.0f s (%.0f probes/s)%s\n",
		label, len(d.Episodes), d.Skipped, d.Dropped, d.Probes, d.Seconds, float64(d.Probes)/max(d.Seconds, 1e-9), cached)
	return d, nil
}

// onGrid moves t forward onto the injection grid: every Every from the
// trace's first start + warm-up. Windows that move by a night (a nightly
// retrain's --from) then inject at the same instants, and the per-day
// dataset cache serves every day but the new one.
func (r *run) onGrid(t time.Time) time.Time {
	anchor := r.sc.First.Add(r.proto.WarmUp)
	if !t.After(anchor) {
		return t
	}
	k := (t.Sub(anchor) + r.proto.Every - 1) / r.proto.Every
	return anchor.Add(k * r.proto.Every)
}

// policyData builds the policies' training and validation datasets once per run.
func (r *run) policyData(ctx context.Context) (*dataset.ChainData, *dataset.ChainData, error) {
	if r.trainCache != nil {
		return r.trainCache, r.validCache, nil
	}
	end := r.trainEnd()
	g := dataset.GenOptions{Protocol: r.proto, From: r.onGrid(r.s.From)}
	if !end.IsZero() {
		// every decision of a training chain precedes the end of training
		g.Until, g.EndBy = end.Add(-r.proto.Limit+1), end
	}
	var train *dataset.ChainData
	for _, s := range r.s.Scales {
		sc, err := r.sc.Scaled(s, r.s.Seed, 0)
		if err != nil {
			return nil, nil, mark(ErrSpec, err)
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
		return nil, nil, mark(ErrSpec, ErrNoTrainingChains)
	}
	var valid *dataset.ChainData
	if !r.s.TrainUntil.IsZero() {
		d, err := r.chainData(ctx, "validation", r.sc, dataset.GenOptions{Protocol: r.proto, From: r.onGrid(r.s.TrainUntil), Until: r.s.Until})
		if err != nil {
			return nil, nil, err
		}
		valid = d
	}
	r.trainCache, r.validCache = train, valid
	return train, valid, nil
}

// trainPolicy builds the chain datasets (cached within the run) and trains one policy.
func (r *run) trainPolicy(ctx context.Context, name string, meta models.Meta) (Trained, error) {
	train, valid, err := r.policyData(ctx)
	if err != nil {
		return Trained{}, err
	}
	cost, out := r.s.Cost, name
	if r.s.Workload != "" {
		cost, _ = provisioner.WorkloadCost(r.s.Workload) // checked by Validate
		out = models.WorkloadModelName(name, r.s.Workload)
	}
	po := PolicyTrainOptions{Seed: r.s.Seed, Meta: meta, Target: r.s.Target, Protocol: r.proto, Cost: cost,
		RL: RLOptions{Steps: r.s.DQNSteps, Iterations: r.s.PGIterations},
		Progress: func(stage string, done, total int) {
			r.update("train "+name+": "+stage, done, total)
		}}
	var m, guard models.Model
	if name == OnlinePolicyName {
		m, guard, err = fitOnlineModels(train, valid, po)
	} else {
		m, err = TrainPolicy(name, train, valid, po)
	}
	r.done()
	if err != nil {
		return Trained{}, fmt.Errorf("train %s: %w", name, err)
	}
	dir := filepath.Join(r.s.Out, out)
	if err := models.Save(dir, m); err != nil {
		return Trained{}, mark(ErrOutput, err)
	}
	if guard != nil {
		if err := models.Save(filepath.Join(dir, models.GuardDir), guard); err != nil {
			return Trained{}, mark(ErrOutput, err)
		}
	}
	return Trained{Name: out, Dir: dir, Meta: m.Meta()}, nil
}

// fitOnlineModels fits xgb-online (FitOnline) and returns its model, with
// the validation outcome of the whole policy (guard and online thresholds
// fed by the validation chains' own outcomes) in its metrics, and its guard.
func fitOnlineModels(train, valid *dataset.ChainData, o PolicyTrainOptions) (models.Model, models.Model, error) {
	p, err := FitOnline(train, o)
	if err != nil {
		return nil, nil, err
	}
	metrics := maps.Clone(p.Model.Meta().Metrics)
	if metrics == nil {
		metrics = map[string]float64{}
	}
	if valid != nil {
		o.defaults()
		if err := OnlineMetrics(metrics, "valid_", p, valid.Episodes, o.Cost); err != nil {
			return nil, nil, err
		}
	}
	err = models.UpdateMeta(p.Model, func(mt *models.Meta) {
		mt.Metrics = metrics
		mt.Params["guard_level"] = strconv.FormatFloat(p.Rule.Online.Gamma, 'g', -1, 64)
		mt.Params["adapt_step"] = (time.Duration(p.Rule.Online.Step) * time.Second).String()
	})
	if err != nil {
		return nil, nil, err
	}
	err = models.UpdateMeta(p.Guard, func(mt *models.Meta) {
		mt.Trace, mt.Windows, mt.Seed, mt.Created = o.Meta.Trace, o.Meta.Windows, o.Seed, o.Meta.Created
	})
	return p.Model, p.Guard, err
}

// trainWait generates the wait datasets and trains the predictor.
func (r *run) trainWait(ctx context.Context, meta models.Meta) (Trained, error) {
	gen := func(label string, o dataset.WaitGenOptions, replicas int) (*dataset.WaitData, error) {
		o.RecordedHistory = r.s.WaitRecorded
		o.Progress = func(done, total int) { r.update("wait dataset "+label, done, total) }
		d, err := dataset.GenerateWaitReplicas(ctx, r.sc, o, replicas, r.s.Workers)
		r.done()
		if err != nil {
			return nil, fmt.Errorf("wait dataset %s: %w", label, err)
		}
		if r.s.WaitRecorded {
			n := len(d.Samples)
			d = RelabelRecorded(r.sc, d)
			r.report("wait dataset %s: %d of %d jobs labelled with their recorded waits (the rest held or unmatched)\n", label, len(d.Samples), n)
		}
		r.report("wait dataset %s: %d jobs in %.0f s\n", label, len(d.Samples), d.Seconds)
		return d, nil
	}
	train, err := gen("train", dataset.WaitGenOptions{From: r.s.From, Until: r.trainEnd()}, r.s.WaitReplicas)
	if err != nil {
		return Trained{}, err
	}
	var valid *dataset.WaitData
	if !r.s.TrainUntil.IsZero() {
		if valid, err = gen("validation", dataset.WaitGenOptions{From: r.s.TrainUntil, Until: r.s.Until, Estimates: true}, 1); err != nil {
			return Trained{}, err
		}
	}
	var params func(float64) xgb.XGBParams
	if r.s.WaitRecorded {
		params = RecordedWaitParams
	}
	w, rep, err := TrainWaitPredictor(train, valid, WaitTrainOptions{Seed: r.s.Seed, Meta: meta, Params: params,
		Progress: func(stage string, done, total int) { r.update("train "+stage, done, total) }})
	r.done()
	if err != nil {
		return Trained{}, fmt.Errorf("train wait: %w", err)
	}
	if r.s.WaitRecorded {
		for _, m := range w.Models {
			if err := models.UpdateMeta(m, func(mt *models.Meta) { mt.Params[models.WaitHistoryParam] = models.WaitHistoryRecorded }); err != nil {
				return Trained{}, err
			}
		}
	}
	dir := filepath.Join(r.s.Out, WaitModel)
	if err := models.SaveWaitPredictor(dir, w); err != nil {
		return Trained{}, mark(ErrOutput, err)
	}
	if rep != nil {
		// Both answers are scored against the wait each job had in the
		// simulated replay of the trace (a real one or a synthetic one
		// alike): Slurm's is the start time the simulated scheduler's first
		// backfill pass planned for the job, what squeue --start would have
		// shown, on the jobs it planned one for.
		r.report("wait predictor on validation: median |error| %s on %d jobs; the simulated Slurm's own start estimate (squeue --start after its first backfill pass in the replay) on the same jobs: %s\n",
			seconds(rep.Estimated.MedianAbsErr), rep.Estimated.N, seconds(rep.Slurm.MedianAbsErr))
	}
	return Trained{Name: WaitModel, Dir: dir, Meta: w.Models[1].Meta()}, nil
}

// seconds renders a number of seconds as a duration rounded to the second.
func seconds(sec float64) string {
	return (time.Duration(sec * float64(time.Second))).Round(time.Second).String()
}
