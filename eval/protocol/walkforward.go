package protocol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// Walk-forward evaluation on episode tables. Each fold scores the chains
// injected in one period with policies trained only on chains whose every
// outcome was known before (ChainEpisode.KnownBy), refitted as often as a
// site's cron retrains them (RetrainFolds); every decision a policy
// makes inside the period uses only hand-offs that had ended by then. The
// tables are exact (dataset.ChainEpisode), so a policy's outcome on a chain
// is the outcome at the first tick it submits.

// Fold is one period of a walk-forward evaluation, or one retraining
// period inside it (RetrainFolds).
type Fold struct {
	Schema     features.SchemaID      // feature schema of the tables
	Period     int                    // the reported period it belongs to (WFOutcome.Fold)
	Start, End time.Time              // scored injections in [Start, End)
	Train      []dataset.ChainEpisode // chains whose every outcome was known by Start (ChainEpisode.KnownBy)
	Test       []dataset.ChainEpisode // chains injected in [Start, End), in injection order
}

// Folds cuts d's episodes (in injection order) at bounds: fold i scores
// [bounds[i], bounds[i+1]) and trains on every chain known by bounds[i]:
// its predecessor had ended and every successor probed for it had started
// (a chain whose reactive successor still queued at bounds[i] would teach
// the model the future).
func Folds(d *dataset.ChainData, bounds []time.Time) []Fold {
	return RetrainFolds(d, bounds, 0)
}

// RetrainFolds is Folds with the models refitted every `every` inside each
// period, as a nightly (or weekly) retrain from the site's history does in
// deployment: period i is cut into folds [t, t+every) (the last one
// shorter), each training on the chains known by its t and reporting as
// period i. Whole days are calendar days in the bounds' zone, so nightly
// refits stay at the same hour across a daylight-saving change. every ≤ 0
// keeps one fold per period.
func RetrainFolds(d *dataset.ChainData, bounds []time.Time, every time.Duration) []Fold {
	var out []Fold
	for i := 0; i+1 < len(bounds); i++ {
		for start := bounds[i]; start.Before(bounds[i+1]); {
			end := bounds[i+1]
			if next := retrainAfter(start, every); every > 0 && next.Before(end) {
				end = next
			}
			f := Fold{Schema: d.Schema, Period: i, Start: start, End: end}
			for _, e := range d.Episodes {
				if !e.KnownBy().After(f.Start) {
					f.Train = append(f.Train, e)
				}
				if !e.Inject.Before(f.Start) && e.Inject.Before(f.End) {
					f.Test = append(f.Test, e)
				}
			}
			out = append(out, f)
			start = end
		}
	}
	return out
}

// retrainAfter is the next refit after t: whole days as calendar days.
func retrainAfter(t time.Time, every time.Duration) time.Time {
	const day = 24 * time.Hour
	if every > 0 && every%day == 0 {
		return t.AddDate(0, 0, int(every/day))
	}
	return t.Add(every)
}

// WFOutcome is one policy's hand-off in a walk-forward fold.
type WFOutcome struct {
	Policy   string
	Fold     int
	Inject   time.Time
	Nodes    int
	GPUs     int
	Tick     int     // tick submitted at (−1: the deadline; TickReplayed: a baseline played by the replay, not on the table)
	Gap      float64 // seconds
	Censored bool
	Reactive float64 // the deadline submission's gap (seconds): the load class
}

// Table baselines of a walk-forward run.
const (
	WFReactive = "reactive" // the successor submitted at the deadline (Lead before the predecessor's end)
	WFOracle   = "oracle"   // the tick with the smallest |gap| (dataset.OracleTick)
)

// TickReplayed is WFOutcome.Tick of a baseline's outcome: the replay
// decided it through the engine, not at a tick of the table.
const TickReplayed = -2

// WFBaselines are the policies without training a walk-forward can score
// beside the learned ones (WFSpec.Baselines), in the order of its table.
var WFBaselines = []string{provisioner.PolicyDependency, provisioner.PolicyLead, provisioner.PolicyStartEstimate, models.PolicyAverage, models.PolicyQuantile, provisioner.PolicyPin}

// WFOptions configure WalkForward.
type WFOptions struct {
	Policies []string                 // learned policies (models.IsLearned, or train.OnlinePolicyName); WFReactive and WFOracle are always scored
	Train    train.PolicyTrainOptions // options of every fit
	Progress func(fold int, policy string)
}

// WalkForward trains each policy on each fold's training chains and plays
// it on the fold's chains in injection order. Outcomes come in fold, then
// policy (reactive, oracle, then opts.Policies), then injection order;
// their Fold is the fold's Period.
func WalkForward(folds []Fold, opts WFOptions) ([]WFOutcome, error) {
	var out []WFOutcome
	for _, f := range folds {
		if len(f.Test) == 0 {
			continue // a retraining period without injections
		}
		if len(f.Train) < 10 && len(opts.Policies) > 0 { // (the table baselines fit nothing)
			return nil, fmt.Errorf("walk-forward fold %d (%s): %d chains known to train on: need ≥ 10",
				f.Period, f.Start.Format("2006-01-02 15:04"), len(f.Train))
		}
		fi := f.Period
		rec := func(name string, ep *dataset.ChainEpisode, k int) WFOutcome {
			g, c := ep.Outcome(k)
			o := WFOutcome{Policy: name, Fold: fi, Inject: ep.Inject, Nodes: ep.Nodes, GPUs: ep.GPUs, Tick: k, Gap: g, Censored: c, Reactive: ep.Reactive}
			out = append(out, o)
			return o
		}
		for i := range f.Test {
			rec(WFReactive, &f.Test[i], -1)
		}
		for i := range f.Test {
			rec(WFOracle, &f.Test[i], dataset.OracleTick(&f.Test[i]))
		}
		td := &dataset.ChainData{Schema: f.Schema, Episodes: f.Train}
		for _, name := range opts.Policies {
			if opts.Progress != nil {
				opts.Progress(fi, name)
			}
			d, err := train.FitTablePolicy(name, td, opts.Train)
			if err != nil {
				return nil, fmt.Errorf("walk-forward fold %d (%s): %w", fi, f.Start.Format("2006-01-02"), err)
			}
			for i := range f.Test {
				ep := &f.Test[i]
				k, err := d.SubmitTick(ep)
				if err != nil {
					return nil, err
				}
				o := rec(name, ep, k)
				if !o.Censored {
					d.Observe(train.OutcomeOf(ep, o.Gap))
				}
			}
		}
	}
	return out, nil
}

// WFSpec is one walk-forward run from a trace: what `mirage eval
// walk-forward` binds its flags into.
type WFSpec struct {
	Jobs      []traces.Job
	TraceName string
	Cluster   sim.Config
	Protocol  scenario.Protocol // zero fields: defaults
	Bounds    []time.Time       // fold starts, then the end of the last fold (≥ 2)
	Retrain   time.Duration     // refit the learned policies this often inside a period, as a nightly cron retrain does (0: once per period)
	Policies  []string          // scored besides reactive and the oracle
	Seed      uint64            // of every fit
	Cache     string            // per-day chain dataset cache ("": none)
	// Scale scales the trace's arrivals (scenario.Scaled with Seed; 0 or
	// 1: as recorded), so that a quiet span can be scored at another
	// span's demand.
	Scale    float64
	Workers  int            // simulator goroutines (0: all cores)
	Progress train.Progress // dataset generation and fitting (nil: none)
	// Baselines are scored beside the learned policies: policies that need
	// no training (lead, dependency, start-estimate, average, quantile),
	// played by ReplayBaselines on the same chains. Empty: none.
	Baselines []string
	// Replayed are learned policies played by ReplayBaselines, as the
	// daemon runs them (through the engine, so that they may pin:
	// NAME-pin, models.ParseRef), each period with its model fitted once
	// on the chains known at the period's start (FitFolds; the published
	// cost). An online rule learns only from hand-offs the replay has seen
	// end.
	Replayed []string
}

// replayFunc plays policies on the chains a walk-forward scores:
// ReplayBaselines, the pair protocol's replay of sc (the same injections
// and decision ticks as the chain tables) over injections in [from,
// until), calling emit once per chain and policy with the hand-off's gap;
// the walk-forward's tests pass fakes. The walk-forward asks for reactive
// too and checks that the replay's reactive gap is its table's deadline
// gap on every chain: the two harnesses must agree before their rows are
// pooled. learned, when not nil, builds the policies the registry cannot
// (a period's fitted models; nil policy and error: not one of them).
type replayFunc func(ctx context.Context, sc *scenario.Scenario, p scenario.Protocol, from, until time.Time, policies []string, workers int,
	learned provisioner.PolicyFactory, progress func(done, total int), emit func(policy string, inject time.Time, nodes, gpus int, gap time.Duration, censored bool)) error

// addBaselines replays s.Baselines over the folds, and s.Replayed period
// by period with that period's fits, and inserts their outcomes after each
// fold's learned policies. An outcome must fall on a chain of its fold's
// table: the replay and the tables inject the same chains, so a stray or a
// missing one is an error, never a silent gap in a row.
func addBaselines(ctx context.Context, s WFSpec, replay replayFunc, sc *scenario.Scenario, folds []Fold, outs []WFOutcome) ([]WFOutcome, error) {
	if len(s.Baselines) == 0 && len(s.Replayed) == 0 {
		return outs, nil
	}
	byFold := make([][]WFOutcome, len(folds))
	add := func(batch [][]WFOutcome) {
		for fi := range batch {
			byFold[fi] = append(byFold[fi], batch[fi]...)
		}
	}
	if len(s.Baselines) > 0 {
		batch, err := replayOn(ctx, s, replay, sc, folds, nil, s.Baselines, nil, "baselines")
		if err != nil {
			return nil, err
		}
		add(batch)
	}
	for fi, f := range folds {
		if len(s.Replayed) == 0 || len(f.Test) == 0 {
			continue
		}
		learned, err := fitReplayed(s, f)
		if err != nil {
			return nil, err
		}
		batch, err := replayOn(ctx, s, replay, sc, folds, []int{fi}, s.Replayed, learned, fmt.Sprintf("replayed (period %d)", fi+1))
		if err != nil {
			return nil, err
		}
		add(batch)
	}
	// Keep the fold-then-policy order of WalkForward's outcomes.
	var merged []WFOutcome
	for fi := range folds {
		for _, o := range outs {
			if o.Fold == fi {
				merged = append(merged, o)
			}
		}
		merged = append(merged, byFold[fi]...)
	}
	return merged, nil
}

// fitReplayed fits the models of s.Replayed once on the chains known at
// f's start (the published cost), as FitFolds does, and builds their
// policies: NAME's model for NAME and NAME-pin.
func fitReplayed(s WFSpec, f Fold) (provisioner.PolicyFactory, error) {
	o := train.PolicyTrainOptions{Seed: s.Seed, Protocol: s.Protocol, Meta: models.Meta{Windows: models.Windows{TrainUntil: f.Start}}}
	built := map[string]provisioner.Policy{}
	for _, name := range s.Replayed {
		base := models.ParseRef(name).Base
		fm, err := fitFold(base, f, o)
		var mp *models.ModelPolicy
		if err == nil {
			if mp, err = models.NewModelPolicy(name, fm.Model); err == nil {
				mp.Guard = fm.Guard
			}
		}
		if err != nil {
			return nil, fmt.Errorf("walk-forward: fit %s: %w", name, err)
		}
		built[name] = mp
		if base != name {
			built[name] = provisioner.Pinned(name, mp)
		}
	}
	return func(name string) (provisioner.Policy, error) { return built[name], nil }, nil
}

// replayOn replays policies (with reactive) over the chains of folds
// (only) or all of them, and returns their outcomes by fold, checked
// against the tables.
func replayOn(ctx context.Context, s WFSpec, replay replayFunc, sc *scenario.Scenario, folds []Fold, only []int, policies []string, learned provisioner.PolicyFactory, what string) ([][]WFOutcome, error) {
	covered := func(fi int) bool { return only == nil || slices.Contains(only, fi) }
	var prog func(done, total int)
	if s.Progress != nil {
		prog = func(done, total int) { s.Progress.Update(what, done, total) }
	}
	// From the first scored chain's injection, so that the replay's
	// injection grid is the tables'.
	var from, until time.Time
	for fi, f := range folds {
		if !covered(fi) {
			continue
		}
		until = f.End
		for _, e := range f.Test {
			if from.IsZero() || e.Inject.Before(from) {
				from = e.Inject
			}
		}
	}
	var got []WFOutcome
	emit := func(policy string, inject time.Time, nodes, gpus int, gap time.Duration, censored bool) {
		got = append(got, WFOutcome{Policy: policy, Inject: inject, Nodes: nodes, GPUs: gpus, Tick: TickReplayed, Gap: gap.Seconds(), Censored: censored})
	}
	err := replay(ctx, sc, s.Protocol, from, until, append([]string{WFReactive}, policies...), s.Workers, learned, prog, emit)
	if s.Progress != nil {
		s.Progress.Done()
	}
	if err != nil {
		return nil, fmt.Errorf("walk-forward %s: %w", what, err)
	}
	type key struct {
		inject time.Time
		nodes  int
	}
	table := map[key]*dataset.ChainEpisode{}
	foldOf := map[key]int{}
	want := 0
	for fi := range folds {
		if !covered(fi) {
			continue
		}
		want += len(folds[fi].Test)
		for i := range folds[fi].Test {
			e := &folds[fi].Test[i]
			k := key{e.Inject.UTC(), e.Nodes}
			table[k], foldOf[k] = e, fi
		}
	}
	byFold := make([][]WFOutcome, len(folds))
	seen := map[string]int{}
	twice := map[string]bool{}
	for _, o := range got {
		k := key{o.Inject.UTC(), o.Nodes}
		e, ok := table[k]
		if !ok {
			return nil, fmt.Errorf("walk-forward %s: %s's chain of %d nodes injected %s is not in the tables", what, o.Policy, o.Nodes, o.Inject.Format(time.RFC3339))
		}
		id := fmt.Sprint(o.Policy, k)
		if twice[id] {
			return nil, fmt.Errorf("walk-forward %s: %s played the %d-node chain injected %s twice", what, o.Policy, o.Nodes, o.Inject.Format(time.RFC3339))
		}
		twice[id] = true
		seen[o.Policy]++
		if o.Policy == WFReactive {
			if o.Gap != e.Reactive {
				return nil, fmt.Errorf("walk-forward %s: the replay and the tables disagree: reactive's gap on the %d-node chain injected %s is %.0f s in the replay, %.0f s in the tables",
					what, o.Nodes, o.Inject.Format(time.RFC3339), o.Gap, e.Reactive)
			}
			continue
		}
		o.Fold, o.Reactive, o.Inject = foldOf[k], e.Reactive, e.Inject // the table's instant: rows pair outcomes by it
		byFold[o.Fold] = append(byFold[o.Fold], o)
	}
	for _, p := range append([]string{WFReactive}, policies...) {
		if seen[p] != want {
			return nil, fmt.Errorf("walk-forward %s: %s scored %d chains, the tables hold %d", what, p, seen[p], want)
		}
	}
	return byFold, nil
}

// WFResult is a walk-forward run's outcomes and its pooled table.
type WFResult struct {
	Chains   int         `json:"chains"` // tabled chains (all folds, training included)
	Folds    []FoldInfo  `json:"folds"`
	Outcomes []WFOutcome `json:"-"`
	Rows     []WFRow     `json:"rows"`
	Pick     string      `json:"pick"` // the deployable policy (models.Ref.UsesModel) with the lowest pooled mean |gap|
	// Best is the scored policy with the lowest pooled mean |gap|, whether
	// or not `mirage submit` can run it yet (NAME-noharm, xgb-nohold and
	// imitate exist only in the walk-forward).
	Best string `json:"best"`
}

// FoldInfo describes one fold.
type FoldInfo struct {
	Start, End    time.Time
	Train, Scored int // chains known at Start to train on; chains scored
	Fits          int // fits of each learned policy in the period (RetrainFolds)
}

// wfError is an error of RunWalkForward or FitFolds that a caller maps to
// its own codes: it matches train.ErrSpec (a spec that cannot be run) or
// train.ErrInput (a trace that cannot be replayed on the cluster) under
// errors.Is, as the training pipeline's errors do.
type wfError struct{ err, kind error }

func (e wfError) Error() string   { return e.err.Error() }
func (e wfError) Unwrap() []error { return []error{e.err, e.kind} }

// mark is err, also matching kind under errors.Is, with err's message.
func mark(kind, err error) error {
	if err == nil {
		return nil
	}
	return wfError{err: err, kind: kind}
}

// RunWalkForward tables every chain injected before the last bound (through
// the per-day cache when s.Cache is set), cuts the folds and scores the
// policies (WalkForward), replaying s.Baselines and s.Replayed with
// ReplayBaselines, pooling them into rows with 2,000-resample bootstrap
// intervals.
func RunWalkForward(ctx context.Context, s WFSpec) (*WFResult, error) {
	return runWalkForward(ctx, s, ReplayBaselines)
}

// runWalkForward is RunWalkForward with replay in place of
// ReplayBaselines (the walk-forward's tests replay fakes).
func runWalkForward(ctx context.Context, s WFSpec, replay replayFunc) (*WFResult, error) {
	if len(s.Bounds) < 2 {
		return nil, mark(train.ErrSpec, errors.New("walk-forward: need at least one fold (two bounds)"))
	}
	for i := 1; i < len(s.Bounds); i++ {
		if !s.Bounds[i].After(s.Bounds[i-1]) {
			return nil, mark(train.ErrSpec, fmt.Errorf("walk-forward: bound %s is not after %s", s.Bounds[i].Format(time.RFC3339), s.Bounds[i-1].Format(time.RFC3339)))
		}
	}
	for _, p := range s.Policies {
		if !train.IsTablePolicy(p) {
			return nil, mark(train.ErrSpec, fmt.Errorf("walk-forward: %w %q (want a learned policy, NAME%s, xgb%s, %s or %s)", models.ErrUnknownPolicy, p, train.NoHarmSuffix, train.NoHoldSuffix, train.OnlinePolicyName, train.ImitationPolicyName))
		}
	}
	if s.Retrain < 0 || (s.Retrain > 0 && s.Retrain < time.Hour) {
		return nil, mark(train.ErrSpec, fmt.Errorf("walk-forward: retrain every %s: want 0 (once per period) or at least 1h", s.Retrain))
	}
	for _, p := range s.Replayed {
		if !models.ParseRef(p).UsesModel() {
			return nil, mark(train.ErrSpec, fmt.Errorf("walk-forward: %w %q to replay (want a learned policy or its pinned form NAME%s)", models.ErrUnknownPolicy, p, models.PinSuffix))
		}
		if slices.Contains(s.Policies, p) {
			return nil, mark(train.ErrSpec, fmt.Errorf("walk-forward: %s is both scored on the tables and replayed: name it once", p))
		}
	}
	for _, p := range s.Baselines {
		if !slices.Contains(WFBaselines, p) {
			return nil, mark(train.ErrSpec, fmt.Errorf("walk-forward: %w %q as a baseline (want one of %s; reactive and the oracle are always scored)", models.ErrUnknownPolicy, p, strings.Join(WFBaselines, ", ")))
		}
	}
	sc, err := scenario.NewScenario(s.TraceName, s.Jobs, s.Cluster)
	if err == nil && s.Scale > 1 {
		sc, err = sc.Scaled(s.Scale, s.Seed, 0)
	}
	if err != nil {
		return nil, mark(train.ErrInput, err)
	}
	g := dataset.GenOptions{Protocol: s.Protocol, Until: s.Bounds[len(s.Bounds)-1], Workers: s.Workers}
	if s.Progress != nil {
		g.Progress = func(done, total int) { s.Progress.Update("chain tables", done, total) }
	}
	var d *dataset.ChainData
	if s.Cache != "" {
		d, _, err = train.DayCache(s.Cache, s.Cluster, s.Protocol.WithDefaults(s.Cluster), sc.Scale, s.Seed).Generate(ctx, sc, g)
	} else {
		d, err = dataset.GenerateChainData(ctx, sc, g)
	}
	if s.Progress != nil {
		s.Progress.Done()
	}
	if err != nil {
		return nil, fmt.Errorf("walk-forward tables: %w", err)
	}
	periods, folds := Folds(d, s.Bounds), RetrainFolds(d, s.Bounds, s.Retrain)
	res := &WFResult{Chains: len(d.Episodes)}
	for _, f := range periods {
		res.Folds = append(res.Folds, FoldInfo{Start: f.Start, End: f.End, Train: len(f.Train), Scored: len(f.Test)})
	}
	for _, f := range folds {
		if len(f.Test) > 0 {
			res.Folds[f.Period].Fits++
		}
	}
	o := WFOptions{Policies: s.Policies, Train: train.PolicyTrainOptions{Seed: s.Seed, Protocol: s.Protocol}}
	if s.Progress != nil {
		done := 0
		o.Progress = func(fold int, p string) {
			s.Progress.Update(fmt.Sprintf("fit and score (period %d: %s)", fold+1, p), done, len(folds)*len(s.Policies))
			done++
		}
	}
	if res.Outcomes, err = WalkForward(folds, o); err != nil {
		return nil, mark(train.ErrSpec, err)
	}
	if res.Outcomes, err = addBaselines(ctx, s, replay, sc, periods, res.Outcomes); err != nil {
		return nil, err
	}
	if s.Progress != nil {
		s.Progress.Done()
	}
	res.Rows = WalkForwardRows(res.Outcomes, len(periods), 2000, 1)
	best, pick := -1.0, -1.0
	for _, r := range res.Rows {
		if r.Class != "all" || !slices.Contains(s.Policies, r.Policy) && !slices.Contains(s.Replayed, r.Policy) {
			continue
		}
		if best < 0 || r.MeanAbsGap < best {
			res.Best, best = r.Policy, r.MeanAbsGap
		}
		if models.ParseRef(r.Policy).UsesModel() && (pick < 0 || r.MeanAbsGap < pick) {
			res.Pick, pick = r.Policy, r.MeanAbsGap
		}
	}
	return res, nil
}

// ReplayBaselines is the replay a walk-forward scores its baselines with
// (RunWalkForward): the pair protocol on the walk-forward's own
// scenario and protocol, so every baseline plays the chains the tables
// hold, decided through the provisioner's engine as in the daemon; emit is
// called once per chain and policy, in injection order. The baselines need
// no model, so nothing they do depends on a fold's training data; learned
// (when not nil) builds the policies fitted for the replayed period, before
// the registry is asked.
func ReplayBaselines(ctx context.Context, sc *scenario.Scenario, p scenario.Protocol, from, until time.Time, policies []string, workers int,
	learned provisioner.PolicyFactory, progress func(done, total int), emit func(policy string, inject time.Time, nodes, gpus int, gap time.Duration, censored bool)) error {
	tick := p.WithDefaults(sc.Config).Tick
	samples, err := RunPairs(ctx, PairConfig{Scenario: sc, Protocol: p, From: from, Until: until, Policies: policies, Workers: workers, Progress: progress,
		Factory: func(probe models.OracleProbe) provisioner.PolicyFactory {
			base := models.PolicyFactory("", models.PolicyOptions{Probe: probe, Tick: tick})
			if learned == nil {
				return base
			}
			return func(name string) (provisioner.Policy, error) {
				if p, err := learned(name); p != nil || err != nil {
					return p, err
				}
				return base(name)
			}
		}})
	if err != nil {
		return err
	}
	for _, s := range samples {
		emit(s.Policy, s.Inject, s.Nodes, s.GPUs, s.Gap, s.Censored)
	}
	return nil
}
