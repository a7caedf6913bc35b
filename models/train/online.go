package train

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/adapt"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/xgb"
)

// NoHarmSuffix after a learned policy's name (xgb-noharm) tunes its
// thresholds under the do-no-harm constraint (PolicyTrainOptions.NoHarm).
const NoHarmSuffix = "-noharm"

// NoHoldSuffix after xgb's name (xgb-nohold) keeps it from holding
// (models.DecisionRule.Hold) instead of choosing a hold among DefaultHolds
// on the calibration split, so that a walk-forward shows what the hold does.
const NoHoldSuffix = "-nohold"

// OnlinePolicyName names OnlinePolicy in a walk-forward run: xgb's
// predicted gap with a do-no-harm guard and online thresholds.
const OnlinePolicyName = "xgb-online"

// TableDecider decides on episode tables, episode by episode in injection
// order; Observe is told each outcome (an online policy learns from it).
type TableDecider interface {
	SubmitTick(ep *dataset.ChainEpisode) (int, error)
	Observe(o adapt.Outcome)
}

// FitTablePolicy trains policy name on train and returns it as a decider on
// episode tables: a learned policy (models.IsLearned, optionally with
// NoHarmSuffix) decides by its tuned rule; OnlinePolicyName is an
// OnlinePolicy (FitOnline).
func FitTablePolicy(name string, train *dataset.ChainData, o PolicyTrainOptions) (TableDecider, error) {
	switch name {
	case OnlinePolicyName:
		return FitOnline(train, o)
	case ImitationPolicyName:
		return FitImitation(train, o)
	}
	name, o = variantOf(name, o)
	if !models.IsLearned(name) {
		return nil, fmt.Errorf("%w %q", models.ErrUnknownPolicy, name)
	}
	m, err := TrainPolicy(name, train, nil, o)
	if err != nil {
		return nil, err
	}
	return &ruleDecider{m: m, rule: *m.Meta().Decision}, nil
}

// IsTablePolicy reports whether FitTablePolicy fits name: a learned
// policy (models.IsLearned, optionally with NoHarmSuffix or NoHoldSuffix),
// OnlinePolicyName or ImitationPolicyName.
func IsTablePolicy(name string) bool {
	base, _ := variantOf(name, PolicyTrainOptions{})
	return name == OnlinePolicyName || name == ImitationPolicyName || models.IsLearned(base)
}

// variantOf strips NoHarmSuffix and NoHoldSuffix from a learned
// policy's name, returning the policy and o with what they ask for.
func variantOf(name string, o PolicyTrainOptions) (string, PolicyTrainOptions) {
	for {
		if base, ok := strings.CutSuffix(name, NoHarmSuffix); ok {
			name, o.NoHarm = base, true
			continue
		}
		if base, ok := strings.CutSuffix(name, NoHoldSuffix); ok {
			name, o.Holds = base, []float64{0}
			continue
		}
		return name, o
	}
}

// ruleDecider plays a trained model's rule: the first tick whose score
// reaches the threshold of the chain's size.
type ruleDecider struct {
	m    models.Model
	rule models.DecisionRule
}

func (d *ruleDecider) SubmitTick(ep *dataset.ChainEpisode) (int, error) {
	sc, err := EpisodeScores(d.m, d.rule, ep)
	if err != nil {
		return 0, err
	}
	return FirstAtLeast(sc, d.rule.For(ep.Nodes)), nil
}

func (d *ruleDecider) Observe(adapt.Outcome) {}

// ImitationPolicyName names the oracle-imitation learner of a walk-forward run.
const ImitationPolicyName = "imitate"

// FitImitation learns from the oracle: boosted trees classify "the oracle
// would have submitted by this tick" (dataset.OracleTarget), and the
// policy submits at the first tick whose probability reaches a threshold
// tuned per chain size on the calibration split (the latest CalibShare of
// train, the model fitted on the rest), then refitted on all of train.
func FitImitation(train *dataset.ChainData, o PolicyTrainOptions) (TableDecider, error) {
	o.defaults()
	early, calib := dataset.SplitByTime(train.Episodes, o.CalibShare)
	fit := func(eps []dataset.ChainEpisode) (models.Model, error) {
		p := xgb.DefaultXGBParams()
		p.Objective, p.MaxDepth, p.MinChildWeight, p.Rounds, p.Seed = "binary:logistic", 5, 20, 200, o.Seed
		m, err := xgb.TrainXGB(dataset.Rows(eps, train.Schema, dataset.OracleTarget), p, models.Meta{Kind: models.KindXGB, Schema: train.Schema, Task: models.Classification})
		if err != nil {
			return nil, fmt.Errorf("train %s: %w", ImitationPolicyName, err)
		}
		return m, nil
	}
	m0, err := fit(early)
	if err != nil {
		return nil, err
	}
	rule, _, err := tuneRule(m0, models.DecisionRule{Threshold: 0.5}, calib, thresholdGrid(0.02, 0.98, 0.01), &o)
	if err != nil {
		return nil, err
	}
	m, err := fit(train.Episodes)
	if err != nil {
		return nil, err
	}
	return &ruleDecider{m: m, rule: rule}, nil
}

// OnlinePolicy is xgb-online on episode tables: xgb's predicted gap
// against its tuned per-size threshold, with the do-no-harm guard and the
// online thresholds of its rule (models.OnlineRule, which says what they
// do; models.ModelPolicy decides the same way in deployment). Thresh is fed
// the realised outcomes by Observe, in the order they become known.
//
// The guard level and the adaptation step are chosen on the latest share
// of the training chains, with models fitted on the earlier share, never
// on the chains a fold scores.
type OnlinePolicy struct {
	Model  models.Model        // xgb, predicting the wait
	Rule   models.DecisionRule // its tuned thresholds and Online
	Guard  models.Model        // P(low load class)
	Thresh *adapt.Thresholds   // online offsets
}

// SubmitTick implements TableDecider.
func (p *OnlinePolicy) SubmitTick(ep *dataset.ChainEpisode) (int, error) {
	sc, err := EpisodeScores(p.Model, p.Rule, ep)
	if err != nil {
		return 0, err
	}
	var low []float64
	if p.Rule.Online.GuardOn() {
		low = make([]float64, len(ep.X))
		if err := p.Guard.PredictBatch(ep.X, low); err != nil {
			return 0, err
		}
	}
	base := p.Rule.For(ep.Nodes)
	for k, s := range sc {
		th := base + p.Thresh.Offset(ep.Nodes, ep.TickTime(k)).Seconds()
		if s >= th && (low == nil || !p.Rule.Online.Guarded(low[k])) {
			return k, nil
		}
	}
	return -1, nil
}

// Observe implements TableDecider.
func (p *OnlinePolicy) Observe(o adapt.Outcome) { p.Thresh.Observe(o) }

// OutcomeOf is the outcome of an episode's hand-off with gap g (seconds),
// known at the later of the successor's start and the predecessor's end
// (as provisioner.HandOff.Known).
func OutcomeOf(ep *dataset.ChainEpisode, g float64) adapt.Outcome {
	gap := time.Duration(g * float64(time.Second))
	return adapt.Outcome{At: ep.PredEnd.Add(max(gap, 0)), Nodes: ep.Nodes, Gap: gap}
}

// LowLoadTarget labels every tick of an episode 1 when its deadline
// submission's gap is in the low class (≤ 2 h), the guard's target.
func LowLoadTarget(ep *dataset.ChainEpisode, _ int) float64 {
	if !ep.ReactiveCensored && ep.Reactive <= 2*3600 {
		return 1
	}
	return 0
}

// guardParams are the guard classifier's: small boosted trees, leaves of ≥ 50 ticks.
func guardParams(seed uint64) xgb.XGBParams {
	p := xgb.DefaultXGBParams()
	p.Objective, p.MaxDepth, p.MinChildWeight, p.Rounds, p.Seed = "binary:logistic", 4, 50, 150, seed
	return p
}

// Online candidates: guard levels (1: off) and adaptation steps (0: off).
var (
	onlineGammas = []float64{1, 0.5, 0.3, 0.2}
	onlineSteps  = []time.Duration{0, 10 * time.Minute, 30 * time.Minute, time.Hour}
)

// onlineDeadBand: realised gaps within ±15 minutes leave the thresholds alone.
const onlineDeadBand = 15 * time.Minute

// FitOnline trains the default learned policy: guard level and adaptation
// step chosen on the calibration split (the latest CalibShare of train) with
// the xgb model and guard fitted on the earlier split — the pair with the
// lowest mean loss among those no worse than the deadline submission on the
// split's low-class chains (else the lowest low-class mean loss) — then
// both refitted on all of train. The loss is the fit's cost (o.Cost, as the
// thresholds are tuned): with the published symmetric cost, 60/h of |gap|
// either way, the |gap| itself. A cost under which overlap is cheap (the
// training workload, whose hand-off turns an hour of overlap into a
// checkpoint) thus does not pick a guard that only saves overlap.
func FitOnline(train *dataset.ChainData, o PolicyTrainOptions) (*OnlinePolicy, error) {
	o.defaults()
	early, calib := dataset.SplitByTime(train.Episodes, o.CalibShare)
	if len(calib) == 0 || len(early) < 2 {
		return nil, fmt.Errorf("train %s: need chains in both the earlier and the calibration split (have %d and %d)", OnlinePolicyName, len(early), len(calib))
	}
	fit := func(eps []dataset.ChainEpisode) (models.Model, models.DecisionRule, models.Model, error) {
		m, err := TrainPolicy(string(models.KindXGB), &dataset.ChainData{Schema: train.Schema, Episodes: eps}, nil, o)
		if err != nil {
			return nil, models.DecisionRule{}, nil, err
		}
		g, err := fitGuard(eps, train.Schema, o.Seed)
		if err != nil {
			return nil, models.DecisionRule{}, nil, err
		}
		return m, *m.Meta().Decision, g, nil
	}
	if o.handOffRule() {
		return fitOnlineHandOff(train, o)
	}
	m0, r0, g0, err := fit(early)
	if err != nil {
		return nil, err
	}
	loss := gapLoss(o.Cost)
	var reactLow, nLow float64
	for i := range calib {
		if LowLoadTarget(&calib[i], 0) == 1 {
			reactLow += loss(&calib[i], calib[i].Reactive)
			nLow++
		}
	}
	bestGamma, bestStep := 1.0, time.Duration(0)
	bestOK, bestAll, bestLow := false, math.Inf(1), math.Inf(1)
	for _, gamma := range onlineGammas {
		for _, step := range onlineSteps {
			r := r0
			r.Online = onlineRule(gamma, step, time.Time{})
			p := &OnlinePolicy{Model: m0, Rule: r, Guard: g0, Thresh: adapt.New(r.Online.Adapt())}
			all, low, err := playMeanLoss(p, calib, loss)
			if err != nil {
				return nil, err
			}
			ok := nLow == 0 || low <= reactLow/nLow
			better := false
			switch {
			case ok && !bestOK:
				better = true
			case ok:
				better = all < bestAll
			case !bestOK:
				better = low < bestLow || (low == bestLow && all < bestAll)
			}
			if better {
				bestGamma, bestStep, bestOK, bestAll, bestLow = gamma, step, ok, all, low
			}
		}
	}
	m, r, g, err := fit(train.Episodes)
	if err != nil {
		return nil, err
	}
	if o.Cost == scenario.DefaultGapCost {
		r.Tuned += fmt.Sprintf("; guard %.2f and adaptation step %s chosen on the calibration split (%d chains): mean |gap| %.2f h, low class %.2f h (deadline %.2f h)",
			bestGamma, bestStep, len(calib), bestAll/3600, bestLow/3600, reactLow/max(nLow, 1)/3600)
	} else {
		r.Tuned += fmt.Sprintf("; guard %.2f and adaptation step %s chosen on the calibration split (%d chains): mean cost %.2f, low class %.2f (deadline %.2f)",
			bestGamma, bestStep, len(calib), bestAll, bestLow, reactLow/max(nLow, 1))
	}
	r.Online = onlineRule(bestGamma, bestStep, onlineSince(o))
	if err := models.UpdateMeta(m, func(mt *models.Meta) { mt.Decision = &r }); err != nil {
		return nil, err
	}
	return &OnlinePolicy{Model: m, Rule: r, Guard: g, Thresh: adapt.New(r.Online.Adapt())}, nil
}

// fitOnlineHandOff is FitOnline for a cost whose successors hand off: xgb
// with its hand-off rule (a conformal quantile of the wait and a QBETS
// floor, handOffRule), guard off and thresholds fixed. The guard and the
// adaptation step are chosen on per-hand-off tables, which price an early
// start as hours held twice where a hand-off makes it one checkpoint. The
// guard is still fitted, so that the model directory has the layout of
// every xgb-online.
func fitOnlineHandOff(train *dataset.ChainData, o PolicyTrainOptions) (*OnlinePolicy, error) {
	m, err := TrainPolicy(string(models.KindXGB), train, nil, o)
	if err != nil {
		return nil, err
	}
	g, err := fitGuard(train.Episodes, train.Schema, o.Seed)
	if err != nil {
		return nil, err
	}
	r := *m.Meta().Decision
	r.Online = onlineRule(1, 0, onlineSince(o))
	r.Tuned += "; guard off and thresholds fixed (both would be chosen on tables that price an early start as hours held twice)"
	if err := models.UpdateMeta(m, func(mt *models.Meta) { mt.Decision = &r }); err != nil {
		return nil, err
	}
	return &OnlinePolicy{Model: m, Rule: r, Guard: g, Thresh: adapt.New(r.Online.Adapt())}, nil
}

// fitGuard fits xgb-online's guard: the classifier of the low load class.
func fitGuard(eps []dataset.ChainEpisode, schema features.SchemaID, seed uint64) (models.Model, error) {
	g, err := xgb.TrainXGB(dataset.Rows(eps, schema, LowLoadTarget), guardParams(seed), models.Meta{Kind: models.KindXGB, Schema: schema, Task: models.Classification})
	if err != nil {
		return nil, fmt.Errorf("train %s guard: %w", OnlinePolicyName, err)
	}
	return g, nil
}

// onlineSince is when the online rule starts counting hand-offs: the end
// of the training data (its creation time when no window is recorded).
func onlineSince(o PolicyTrainOptions) time.Time {
	if t := o.Meta.Windows.TrainUntil; !t.IsZero() {
		return t
	}
	return o.Meta.Created
}

// OnlineMetrics plays p on eps in order, with thresholds fed only by these
// episodes' own outcomes (p's are left alone), and records the outcome
// metrics under prefix, as policyMetrics does for a rule.
func OnlineMetrics(metrics map[string]float64, prefix string, p *OnlinePolicy, eps []dataset.ChainEpisode, cost scenario.GapCost) error {
	if len(eps) == 0 {
		return nil
	}
	q := *p
	q.Thresh = adapt.New(p.Rule.Online.Adapt())
	gaps, gpus, cens, err := dataset.TableOutcomes(eps, func(ep *dataset.ChainEpisode) (int, error) {
		k, err := q.SubmitTick(ep)
		if err != nil {
			return 0, err
		}
		if g, c := ep.Outcome(k); !c {
			q.Observe(OutcomeOf(ep, g))
		}
		return k, nil
	})
	if err != nil {
		return err
	}
	outcomeMetrics(metrics, prefix, eps, gaps, gpus, cens, cost)
	return nil
}

// onlineRule is the online rule with guard level gamma and adaptation step,
// counting outcomes known from since.
func onlineRule(gamma float64, step time.Duration, since time.Time) *models.OnlineRule {
	return &models.OnlineRule{Gamma: gamma, Step: step.Seconds(), DeadBand: onlineDeadBand.Seconds(), Since: since}
}

// gapLoss is what a gap of g seconds costs a chain under c: with the
// published symmetric cost (60/h of |gap|) the |gap| in seconds, which
// orders the same; otherwise c's cost for the chain's GPUs.
func gapLoss(c scenario.GapCost) func(ep *dataset.ChainEpisode, g float64) float64 {
	if c == scenario.DefaultGapCost {
		return func(_ *dataset.ChainEpisode, g float64) float64 { return math.Abs(g) }
	}
	return func(ep *dataset.ChainEpisode, g float64) float64 {
		return c.Cost(time.Duration(g*float64(time.Second)), ep.GPUs)
	}
}

// playMeanLoss plays d on eps in order (feeding it each outcome) and
// returns the mean loss over all chains and over the low-class ones.
func playMeanLoss(d TableDecider, eps []dataset.ChainEpisode, loss func(*dataset.ChainEpisode, float64) float64) (all, low float64, err error) {
	var nLow float64
	for i := range eps {
		ep := &eps[i]
		k, err := d.SubmitTick(ep)
		if err != nil {
			return 0, 0, err
		}
		g, c := ep.Outcome(k)
		all += loss(ep, g)
		if LowLoadTarget(ep, 0) == 1 {
			low += loss(ep, g)
			nLow++
		}
		if !c {
			d.Observe(OutcomeOf(ep, g))
		}
	}
	return all / float64(len(eps)), low / max(nLow, 1), nil
}
