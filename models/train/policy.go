package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/forest"
	"github.com/mirage-gpu/mirage/models/nn"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/provisioner"
)

// PolicyTrainOptions control TrainPolicy.
type PolicyTrainOptions struct {
	Seed        uint64                              // seed of every fit (recorded)
	Cost        scenario.GapCost                    // tuning objective and RL reward (zero: DefaultGapCost)
	CalibShare  float64                             // latest share of training episodes held out to tune the decision threshold (default 0.2)
	NoHarm      bool                                // tune thresholds under the do-no-harm constraint (TuneThresholdNoHarm)
	Target      string                              // xgb regression target: TargetWait (default) or TargetGap
	Holds       []float64                           // xgb hold candidates (hours; 0: off; models.DecisionRule.Hold), chosen on the calibration split (nil: DefaultHolds)
	XGBLoss     string                              // xgb loss: LossQuantileDecision (default) or LossSquared
	XGB         *xgb.XGBParams                      // xgb parameters (nil: DefaultQuantileParams, or DefaultXGBParams for LossSquared)
	RFXGB       *xgb.XGBParams                      // rf-xgb parameters (nil: DefaultRFXGBParams)
	Golearn     forest.GolearnRFParams              // rf-golearn parameters
	GolearnRows int                                 // rows subsampled for rf-golearn (default 20000; golearn is slow, see facts)
	RL          RLOptions                           // dqn and pg
	Meta        models.Meta                         // trace and windows to record (kind, task, schema are filled in)
	Protocol    scenario.Protocol                   // protocol of the data (for a live RL environment's episode length)
	Progress    func(stage string, done, total int) // optional progress
}

func (o *PolicyTrainOptions) protocolLimit() time.Duration {
	if o.Protocol.Limit > 0 {
		return o.Protocol.Limit
	}
	return scenario.DefaultProtocol().Limit
}

func (o *PolicyTrainOptions) protocolTick() time.Duration {
	if o.Protocol.Tick > 0 {
		return o.Protocol.Tick
	}
	return scenario.DefaultProtocol().Tick
}

func (o *PolicyTrainOptions) defaults() {
	if o.Cost == (scenario.GapCost{}) {
		o.Cost = scenario.DefaultGapCost
	}
	if o.CalibShare <= 0 {
		o.CalibShare = 0.2
	}
	if o.Target == "" {
		o.Target = models.TargetWait
	}
	if o.XGBLoss == "" {
		o.XGBLoss = LossQuantileDecision
	}
	if o.GolearnRows <= 0 {
		o.GolearnRows = 20000
	}
	if o.Holds == nil {
		o.Holds = DefaultHolds
	}
}

// xgb losses of PolicyTrainOptions.XGBLoss.
const (
	// LossQuantileDecision regresses the quantile of the target at which
	// the decision is optimal (DecisionQuantile): with a cost a per hour of
	// interruption and b per hour of overlap, submitting now beats waiting
	// a little longer exactly when P(wait > time left) ≥ b/(a+b), i.e. when
	// the a/(a+b) quantile of the wait reaches the time left — the median
	// for the symmetric default. The mean (squared loss) is pulled up by
	// the heavy tail of waits and submits too early in quiet periods.
	LossQuantileDecision = "quantile"
	// LossSquared regresses the mean (squared error).
	LossSquared = "squared"
)

// DecisionQuantile is a/(a+b) for the cost: a the cost of an hour of
// interruption, b of an hour of overlap of a segment of gpus GPUs.
func DecisionQuantile(c scenario.GapCost, gpus int) float64 {
	a := c.InterruptionPerHour
	b := c.OverlapPerHour + c.OverlapPerGPUHour*float64(gpus)
	if a+b <= 0 {
		return 0.5
	}
	return min(max(a/(a+b), 0.05), 0.95)
}

// TrainPolicy trains the learned policy name (rf, rf-xgb, rf-golearn, xgb,
// dqn, pg) on the training episodes and returns its model with a tuned
// decision rule and validation metrics in meta.json:
//
//  1. The training episodes are split by time: the latest CalibShare is the
//     calibration split.
//  2. Trees (rf-*, xgb) are fitted on the earlier part; their decision
//     threshold is the one that minimises the mean GapCost on the
//     calibration split, played exactly on its episode tables (the first
//     tick whose score reaches the threshold; the deadline otherwise). The
//     model is then refitted on all training episodes with that threshold.
//  3. dqn and pg learn on the earlier part's episode tables (TableEnv: the
//     simulator's outcomes, see dataset.ChainEpisode); the network that did best on
//     the calibration split is kept, and decides greedily (threshold 0).
//
// valid (may be nil) gives the validation metrics: prediction error and
// the outcome of the policy on every validation episode.
//
// Experiments tried on LS6 and not kept: docs/history.md.
func TrainPolicy(name string, train, valid *dataset.ChainData, o PolicyTrainOptions) (models.Model, error) {
	o.defaults()
	if train == nil || len(train.Episodes) < 2 {
		return nil, errors.New("train policy: need at least two training episodes")
	}
	if err := features.CheckSchema(train.Schema, features.Schema()); err != nil {
		return nil, fmt.Errorf("train policy: training data: %w", err)
	}
	if valid != nil {
		if err := features.CheckSchema(valid.Schema, features.Schema()); err != nil {
			return nil, fmt.Errorf("train policy: validation data: %w", err)
		}
	}
	kind := models.ResolveKind(name)
	early, calib := dataset.SplitByTime(train.Episodes, o.CalibShare)
	meta := o.Meta
	meta.Kind, meta.Seed, meta.Schema = kind, o.Seed, train.Schema
	var (
		m    models.Model
		rule models.DecisionRule
		err  error
	)
	switch kind {
	case models.KindXGB, models.KindRFXGB, models.KindRFGolearn:
		m, rule, err = trainTreePolicy(kind, early, calib, train.Episodes, meta, &o)
	case models.KindDQN, models.KindPG:
		m, rule, err = trainRLPolicy(kind, early, calib, meta, &o)
	default:
		return nil, fmt.Errorf("train policy: %w %q (learned policies: %v)", models.ErrUnknownKind, name, models.LearnedPolicies())
	}
	if err != nil {
		return nil, err
	}
	metrics := map[string]float64{}
	for k, v := range m.Meta().Metrics {
		metrics[k] = v
	}
	if err := policyMetrics(metrics, "calib_", m, rule, calib, o.Cost); err != nil {
		return nil, err
	}
	if valid != nil && len(valid.Episodes) > 0 {
		if err := policyMetrics(metrics, "valid_", m, rule, valid.Episodes, o.Cost); err != nil {
			return nil, err
		}
	}
	err = models.UpdateMeta(m, func(mt *models.Meta) {
		mt.Decision = &rule
		mt.Metrics = metrics
		mt.Trace, mt.Windows, mt.Seed, mt.Created, mt.Cluster = meta.Trace, meta.Windows, o.Seed, meta.Created, meta.Cluster
		if mt.Params == nil {
			mt.Params = map[string]string{}
		}
		mt.Params["calib_share"] = strconv.FormatFloat(o.CalibShare, 'g', -1, 64)
		mt.Params["cost"] = o.Cost.String()
		if mt.TrainRows == 0 {
			mt.TrainRows = rowsOf(train.Episodes)
		}
	})
	return m, err
}

func rowsOf(eps []dataset.ChainEpisode) int {
	n := 0
	for i := range eps {
		n += len(eps[i].X)
	}
	return n
}

// policyMetrics adds the outcome of m's rule on eps (and its prediction error) under prefix.
func policyMetrics(metrics map[string]float64, prefix string, m models.Model, rule models.DecisionRule, eps []dataset.ChainEpisode, cost scenario.GapCost) error {
	if len(eps) == 0 {
		return nil
	}
	task := m.Meta().Task
	var pred, yv []float64
	gaps, gpus, cens, err := dataset.TableOutcomes(eps, func(ep *dataset.ChainEpisode) (int, error) {
		raw := make([]float64, len(ep.X))
		if err := m.PredictBatch(ep.X, raw); err != nil {
			return 0, err
		}
		sc := make([]float64, len(raw))
		for k := range raw {
			score := rule.Score(task, raw[k], ep.Left(k))
			sc[k] = unlessHeld(rule, ep.X[k], score)
			switch task {
			case models.Regression:
				pred, yv = append(pred, score), append(yv, ep.Gap[k]) // the predicted gap, held or not
			case models.Classification:
				pred, yv = append(pred, raw[k]), append(yv, dataset.SafeTarget(ep, k))
			}
		}
		return FirstAtLeast(sc, rule.For(ep.Nodes)), nil
	})
	if err != nil {
		return err
	}
	outcomeMetrics(metrics, prefix, eps, gaps, gpus, cens, cost)
	switch task {
	case models.Regression:
		metrics[prefix+"gap_mae_h"] = models.MAE(pred, yv) / 3600
		metrics[prefix+"gap_rmse_h"] = models.RMSE(pred, yv) / 3600
	case models.Classification:
		metrics[prefix+"accuracy"] = models.Accuracy(pred, yv)
		metrics[prefix+"auc"] = models.AUC(pred, yv)
	}
	return nil
}

// outcomeMetrics records the outcome metrics of a policy's gaps on eps
// (and reactive's, for comparison) under prefix.
func outcomeMetrics(metrics map[string]float64, prefix string, eps []dataset.ChainEpisode, gaps []float64, gpus []int, cens []bool, cost scenario.GapCost) {
	s := scenario.Summarise(gaps, gpus, cens, cost)
	metrics[prefix+"episodes"] = float64(s.N)
	metrics[prefix+"mean_abs_gap_h"] = s.MeanAbsGapH
	metrics[prefix+"mean_cost"] = s.MeanCost
	metrics[prefix+"mean_interrupt_h"] = s.MeanInterruptH
	metrics[prefix+"p90_interrupt_h"] = s.P90InterruptH
	metrics[prefix+"mean_overlap_h"] = s.MeanOverlapH
	metrics[prefix+"p90_overlap_h"] = s.P90OverlapH
	metrics[prefix+"zero_interruption"] = s.ZeroInterruption
	metrics[prefix+"within_hour"] = s.WithinHour
	rg, rgp, rc, _ := dataset.TableOutcomes(eps, func(*dataset.ChainEpisode) (int, error) { return -1, nil })
	metrics[prefix+"reactive_mean_abs_gap_h"] = scenario.Summarise(rg, rgp, rc, cost).MeanAbsGapH
}

// trainTreePolicy fits a tree model on early, tunes its threshold on calib, refits on all.
func trainTreePolicy(kind models.Kind, early, calib, all []dataset.ChainEpisode, meta models.Meta, o *PolicyTrainOptions) (models.Model, models.DecisionRule, error) {
	schema := meta.Schema
	fit := func(eps []dataset.ChainEpisode, stage string) (models.Model, error) {
		if o.Progress != nil {
			o.Progress(stage, 0, 1)
			defer o.Progress(stage, 1, 1)
		}
		switch kind {
		case models.KindXGB:
			return fitXGBPolicy(eps, schema, meta, o)
		case models.KindRFXGB:
			p := xgb.DefaultRFXGBParams()
			if o.RFXGB != nil {
				p = *o.RFXGB
			}
			p.Seed = o.Seed
			return xgb.TrainXGB(dataset.Rows(eps, schema, dataset.SafeTarget), p, meta)
		default:
			ds := subsampleRows(dataset.Rows(eps, schema, dataset.SafeTarget), o.GolearnRows, o.Seed)
			return forest.TrainRFGolearn(ds, o.Golearn, meta)
		}
	}
	m0, err := fit(early, "fit on the earlier training split")
	if err != nil {
		return nil, models.DecisionRule{}, err
	}
	rule := models.DefaultDecisionRule(m0.Meta().Task)
	if kind == models.KindXGB {
		rule.Target = o.Target
		if o.handOffRule() {
			rule, err = handOffRule(m0, rule, early, calib, o)
		} else {
			rule, err = tuneHold(m0, rule, calib, o)
		}
		if err != nil {
			return nil, models.DecisionRule{}, err
		}
	} else if rule, _, err = tuneRule(m0, rule, calib, thresholdGrid(0.02, 0.98, 0.01), o); err != nil {
		return nil, models.DecisionRule{}, err
	}
	m, err := fit(all, "refit on all training episodes")
	if err != nil {
		return nil, models.DecisionRule{}, err
	}
	return m, rule, nil
}

// fitXGBPolicy fits the xgb policy's regression: the decision quantile
// (or the mean) of the successor's wait if submitted now — on
// log1p(wait/60 s), which quantiles are invariant to and which keeps the
// heavy tail from dominating — or of the gap.
func fitXGBPolicy(eps []dataset.ChainEpisode, schema features.SchemaID, meta models.Meta, o *PolicyTrainOptions) (models.Model, error) {
	if o.XGBLoss != LossQuantileDecision && o.XGBLoss != LossSquared {
		return nil, fmt.Errorf("train xgb: loss %q: want %s or %s", o.XGBLoss, LossQuantileDecision, LossSquared)
	}
	q := fitQuantile(eps, o.Cost)
	var p xgb.XGBParams
	switch {
	case o.XGB != nil:
		p = *o.XGB
	case o.XGBLoss == LossQuantileDecision:
		p = xgb.DefaultQuantileParams(q)
	default:
		p = xgb.DefaultXGBParams()
	}
	if o.XGBLoss == LossQuantileDecision {
		p.Quantile = q
	} else {
		p.Quantile = 0
	}
	p.Seed = o.Seed
	const unit = 60.0
	logWait := o.Target == models.TargetWait && o.XGBLoss == LossQuantileDecision
	target := dataset.GapTarget
	switch {
	case logWait:
		target = func(ep *dataset.ChainEpisode, k int) float64 {
			return math.Log1p(math.Max(dataset.WaitTarget(ep, k), 0) / unit)
		}
	case o.Target == models.TargetWait:
		target = dataset.WaitTarget
	}
	m, err := xgb.TrainXGB(dataset.Rows(eps, schema, target), p, meta)
	if err != nil {
		return nil, err
	}
	err = models.UpdateMeta(m, func(mt *models.Meta) {
		mt.Params["loss"] = o.XGBLoss
		mt.Params["target"] = o.Target
		if logWait {
			if mt.Output == nil {
				mt.Output = &models.OutputTransform{Scale: 1}
			}
			mt.Output.Expm1Unit = unit
			mt.Params["target"] = "log1p(wait/60s)"
		}
	})
	return m, err
}

// fitQuantile is the decision quantile of the cost at the episodes' median
// GPUs: the quantile of the wait xgb is fitted for.
func fitQuantile(eps []dataset.ChainEpisode, cost scenario.GapCost) float64 {
	var gpus []float64
	for i := range eps {
		gpus = append(gpus, float64(eps[i].GPUs))
	}
	sort.Float64s(gpus)
	return DecisionQuantile(cost, int(features.Percentile(gpus, 0.5)))
}

// handOffRule reports whether xgb decides by the hand-off rule: the cost's
// successors hand off and the model is a quantile of the wait.
func (o *PolicyTrainOptions) handOffRule() bool {
	return o.Cost.HandOff && o.Target == models.TargetWait && o.XGBLoss == LossQuantileDecision
}

// handOffRule is xgb's rule for a cost whose successors hand off. Its
// calibration split's tables price every early start as hours of GPUs held
// twice, which a hand-off makes one checkpoint, so no threshold is tuned on
// them. The model m (fitted on early) predicts the cost's decision
// quantile q of the wait; the rule submits when that quantile reaches the
// predecessor's time left (threshold 0: from then on, waiting longer costs
// more than it saves), with
//
//   - the prediction shifted on its log scale by split conformal
//     calibration (ConformalShift on calib), so that it covers q of the
//     calibration split's waits, which the model fitted on earlier chains
//     may not: waits drift;
//   - a floor: the QBETS bound on the q quantile of the last waits
//     (QuantilePolicy), which follows a surge of waits the features have
//     not seen; the policy submits when either says so.
func handOffRule(m models.Model, rule models.DecisionRule, early, calib []dataset.ChainEpisode, o *PolicyTrainOptions) (models.DecisionRule, error) {
	q := fitQuantile(early, o.Cost)
	shift, n, err := ConformalShift(m, calib, q)
	if err != nil {
		return rule, err
	}
	rule.Threshold, rule.BySize, rule.Hold, rule.ByWorkload = 0, nil, 0, nil
	rule.WaitShift = shift
	rule.Floor = &models.QuantilePolicy{Quantile: q, Confidence: 0.95, Window: features.HistoryStarts}
	rule.Tuned = fmt.Sprintf("hand-off rule (%s): submit when the %.2f quantile of the wait reaches the time left, "+
		"the prediction shifted by %+.3f on its log scale to cover that share of the calibration split's %d waits (%d chains), "+
		"or when the QBETS bound on the last %d waits does", o.Cost, q, shift, n, len(calib), features.HistoryStarts)
	// The workload whose cost this is decides by the same rule.
	for _, w := range provisioner.Workloads() {
		if c, _ := provisioner.WorkloadCost(w); c == o.Cost {
			rule.ByWorkload = map[string]models.WorkloadRule{w: {Tuned: rule.Tuned}}
		}
	}
	return rule, nil
}

// ConformalShift is split conformal calibration of a wait quantile model:
// the shift s of m's predicted log1p(wait/60 s) such that the shifted
// prediction reaches the recorded wait at ⌈(n+1)·q⌉ of the n ticks of calib
// (the order statistic of the residuals log1p(wait/60) − log1p(pred/60)).
// With no tick it returns 0.
func ConformalShift(m models.Model, calib []dataset.ChainEpisode, q float64) (shift float64, n int, err error) {
	var res []float64
	for i := range calib {
		ep := &calib[i]
		pred := make([]float64, len(ep.X))
		if err := m.PredictBatch(ep.X, pred); err != nil {
			return 0, 0, err
		}
		for k := range pred {
			w := math.Max(dataset.WaitTarget(ep, k), 0)
			res = append(res, math.Log1p(w/60)-math.Log1p(math.Max(pred[k], 0)/60))
		}
	}
	if len(res) == 0 {
		return 0, 0, nil
	}
	return conformalQuantile(res, q), len(res), nil
}

// gridSeconds are the xgb policy's threshold candidates: −12 h … +6 h of
// predicted gap, 5-minute steps.
var gridSeconds = thresholdGrid(-12*3600, 6*3600, 300)

// tuneHold tunes the xgb rule's thresholds for each of o.Holds and keeps the
// hold of lower mean cost on calib (the first on ties: no hold, by default).
func tuneHold(m models.Model, rule models.DecisionRule, calib []dataset.ChainEpisode, o *PolicyTrainOptions) (models.DecisionRule, error) {
	var best models.DecisionRule
	bestCost := math.Inf(1)
	var costs []string
	for _, hold := range o.Holds {
		r := rule
		r.Hold = hold
		r, c, err := tuneRule(m, r, calib, gridSeconds, o)
		if err != nil {
			return rule, err
		}
		costs = append(costs, fmt.Sprintf("%gh %.2f", hold, c))
		if c < bestCost || len(costs) == 1 {
			best, bestCost = r, c
		}
	}
	if len(costs) > 1 {
		best.Tuned += fmt.Sprintf("; hold %gh (calibration mean cost by hold: %s)", best.Hold, strings.Join(costs, ", "))
	}
	return best, nil
}

// DefaultHolds are xgb's hold candidates (hours; 0: no hold, which wins ties).
var DefaultHolds = []float64{0, 0.5, 1, 2, 4}

// tuneRule sets the rule's threshold, and per chain size where the
// calibration split has enough chains of it, to the candidates that
// minimise the mean cost of m's first-reach submissions on calib. It
// returns the tuned rule's mean cost on calib.
func tuneRule(m models.Model, rule models.DecisionRule, calib []dataset.ChainEpisode, grid []float64, o *PolicyTrainOptions) (models.DecisionRule, float64, error) {
	if len(calib) == 0 {
		return rule, math.NaN(), nil
	}
	scores := make([][]float64, len(calib))
	for i := range calib {
		var err error
		if scores[i], err = EpisodeScores(m, rule, &calib[i]); err != nil {
			return rule, math.NaN(), err
		}
	}
	if grid == nil {
		// Preference scores have no natural unit: candidates are 0 and the
		// percentiles of the calibration scores.
		var all []float64
		for _, s := range scores {
			all = append(all, s...)
		}
		sort.Float64s(all)
		grid = []float64{0}
		for i := 0; i <= 100; i++ {
			grid = append(grid, features.Percentile(all, float64(i)/100))
		}
	}
	th, bySize, tuned := tuneThresholds(calib, scores, grid, o.Cost, o)
	rule.Threshold, rule.BySize = th, bySize
	if rule.Tuned != "" {
		tuned = rule.Tuned + "; threshold: " + tuned
	}
	rule.Tuned = tuned
	// The same model decides for every workload, with thresholds tuned for
	// its cost on the same split.
	rule.ByWorkload = map[string]models.WorkloadRule{}
	for _, w := range provisioner.Workloads() {
		cost, _ := provisioner.WorkloadCost(w)
		th, bySize, tuned := tuneThresholds(calib, scores, grid, cost, o)
		rule.ByWorkload[w] = models.WorkloadRule{Threshold: th, BySize: bySize, Tuned: tuned + " (" + w + ": " + cost.String() + ")"}
	}
	return rule, ruleCost(calib, scores, rule, o.Cost), nil
}

// ruleCost is the mean cost on eps of the rule's first-reach submissions
// (each chain with its size's threshold), scores[i] being eps[i]'s.
func ruleCost(eps []dataset.ChainEpisode, scores [][]float64, rule models.DecisionRule, cost scenario.GapCost) float64 {
	total := 0.0
	for i := range eps {
		g, _ := eps[i].Outcome(FirstAtLeast(scores[i], rule.For(eps[i].Nodes)))
		total += cost.Cost(time.Duration(g*float64(time.Second)), eps[i].GPUs)
	}
	return total / float64(len(eps))
}

// tuneThresholds chooses the threshold, and per chain size where the
// calibration split has enough chains of it, that minimise the mean cost
// of the first-reach submissions on calib.
func tuneThresholds(calib []dataset.ChainEpisode, scores [][]float64, grid []float64, cost scenario.GapCost, o *PolicyTrainOptions) (float64, []models.SizeThreshold, string) {
	tune := TuneThreshold
	if o.NoHarm {
		tune = TuneThresholdNoHarm
	}
	th, c := tune(calib, scores, grid, cost)
	tuned := fmt.Sprintf("min mean cost %.2f on the calibration split (%d chains, latest %.0f%% of training)", c, len(calib), o.CalibShare*100)
	bySize := map[int][]int{}
	for i := range calib {
		bySize[calib[i].Nodes] = append(bySize[calib[i].Nodes], i)
	}
	sizes := make([]int, 0, len(bySize))
	for n := range bySize {
		sizes = append(sizes, n)
	}
	sort.Ints(sizes)
	total := 0.0
	var out []models.SizeThreshold
	for _, n := range sizes {
		idx := bySize[n]
		if len(idx) < minSizeChains || len(sizes) < 2 {
			continue
		}
		eps := make([]dataset.ChainEpisode, len(idx))
		sc := make([][]float64, len(idx))
		for j, i := range idx {
			eps[j], sc[j] = calib[i], scores[i]
		}
		t, cn := tune(eps, sc, grid, cost)
		out = append(out, models.SizeThreshold{Nodes: n, Threshold: t})
		total += cn * float64(len(idx))
	}
	if len(out) > 0 {
		tuned += fmt.Sprintf("; per chain size: mean cost %.2f", total/float64(len(calib)))
	}
	return th, out, tuned
}

// minSizeChains is how many calibration chains of one size a per-size threshold needs.
const minSizeChains = 20

// subsampleRows keeps at most n rows, drawn without replacement from seed (order kept).
func subsampleRows(ds *models.Dataset, n int, seed uint64) *models.Dataset {
	if len(ds.X) <= n {
		return ds
	}
	r := rand.New(rand.NewPCG(seed, 0x73756273))
	idx := r.Perm(len(ds.X))[:n]
	keep := make([]bool, len(ds.X))
	for _, i := range idx {
		keep[i] = true
	}
	out := &models.Dataset{Schema: ds.Schema}
	for i := range ds.X {
		if keep[i] {
			out.X, out.Y = append(out.X, ds.X[i]), append(out.Y, ds.Y[i])
		}
	}
	return out
}

// RLOptions control the dqn and pg learners on the episode tables.
type RLOptions struct {
	Steps           int                         // dqn: environment steps (default 150000)
	TargetEvery     int                         // dqn: learning steps between target-network copies (default 500)
	Iterations      int                         // pg: updates (default 800)
	EpisodesPerIter int                         // pg: episodes per update (default 16)
	Hidden          []int                       // hidden layers (default [64 64])
	LearningRate    float64                     // Adam (default 5e-4 dqn, 1e-3 pg)
	Entropy         float64                     // pg entropy bonus (default 0.1, as published)
	Evals           int                         // checkpoint evaluations on the calibration split (default 20)
	FullStarts      bool                        // start every episode at the predecessor's start (default: exploring starts at a uniform tick)
	Greedy          bool                        // keep the greedy rule (preference ≥ 0) instead of tuning the threshold per chain size on the calibration split
	Env             nn.Env                      // train on this environment (e.g. a SimEnv, live in the simulator) instead of the episode tables of the earlier training split
	Log             func(msg string, kv ...any) // optional progress log
}

func (o *RLOptions) defaults(kind models.Kind) {
	if o.Steps <= 0 {
		o.Steps = 150000
	}
	if o.Iterations <= 0 {
		o.Iterations = 800
	}
	if o.TargetEvery <= 0 {
		o.TargetEvery = 500
	}
	if o.EpisodesPerIter <= 0 {
		o.EpisodesPerIter = 16
	}
	if o.Hidden == nil {
		o.Hidden = []int{64, 64}
	}
	if o.LearningRate <= 0 {
		o.LearningRate = 5e-4
		if kind == models.KindPG {
			o.LearningRate = 1e-3
		}
	}
	if o.Entropy <= 0 {
		o.Entropy = 0.1
	}
	if o.Evals <= 0 {
		o.Evals = 20
	}
}

// TableEnv is the chain environment played on episode tables: each Reset
// picks an episode (and, with exploring starts, a tick to start from; a
// chain that waited until then is in exactly that state, since waiting does
// not change the cluster); wait moves to the next tick with reward 0;
// submit ends the episode with reward −Cost(gap)/Scale; waiting past the
// last tick ends it with the deadline (reactive) submission's reward.
type TableEnv struct {
	Episodes       []dataset.ChainEpisode // the tables
	Cost           scenario.GapCost       // reward = −Cost/Scale
	Scale          float64                // reward divisor (default Cost.InterruptionPerHour: rewards in hours)
	ExploringStart bool                   // start at a uniform tick instead of tick 0
	rng            *rand.Rand
	ep             *dataset.ChainEpisode
	k              int
	// LastGap is the gap (seconds) of the last finished episode.
	LastGap float64
}

// NewTableEnv returns an environment over eps drawing episodes from seed.
func NewTableEnv(eps []dataset.ChainEpisode, cost scenario.GapCost, exploring bool, seed uint64) *TableEnv {
	sc := cost.InterruptionPerHour
	if sc <= 0 {
		sc = 1
	}
	return &TableEnv{Episodes: eps, Cost: cost, Scale: sc, ExploringStart: exploring, rng: rand.New(rand.NewPCG(seed, 0x656e76))}
}

// Reset implements nn.Env.
func (e *TableEnv) Reset() ([]float64, error) {
	if len(e.Episodes) == 0 {
		return nil, errors.New("table env: no episodes")
	}
	e.ep = &e.Episodes[e.rng.IntN(len(e.Episodes))]
	if len(e.ep.X) == 0 {
		return nil, errors.New("table env: episode without ticks")
	}
	e.k = 0
	if e.ExploringStart {
		e.k = e.rng.IntN(len(e.ep.X))
	}
	return e.ep.X[e.k], nil
}

// Step implements nn.Env.
func (e *TableEnv) Step(a int) ([]float64, float64, bool, error) {
	if e.ep == nil {
		return nil, 0, true, errors.New("table env: Step before Reset")
	}
	if a == nn.ActionSubmit {
		return nil, e.finish(e.k), true, nil
	}
	e.k++
	if e.k >= len(e.ep.X) {
		return nil, e.finish(-1), true, nil
	}
	return e.ep.X[e.k], 0, false, nil
}

func (e *TableEnv) finish(k int) float64 {
	g, _ := e.ep.Outcome(k)
	e.LastGap = g
	e.ep = nil
	return -e.Cost.Cost(time.Duration(g*float64(time.Second)), e.epGPUs()) / e.Scale
}

func (e *TableEnv) epGPUs() int {
	if e.ep == nil {
		return 0
	}
	return e.ep.GPUs
}

// trainRLPolicy trains dqn or pg on early's tables and keeps the network that did best on calib.
func trainRLPolicy(kind models.Kind, early, calib []dataset.ChainEpisode, meta models.Meta, o *PolicyTrainOptions) (models.Model, models.DecisionRule, error) {
	ro := o.RL
	ro.defaults(kind)
	start := time.Now() // wall time, meta.json only
	var rows [][]float64
	for i := range early {
		rows = append(rows, early[i].X...)
	}
	if len(rows) == 0 {
		return nil, models.DecisionRule{}, errors.New("train rl: no training ticks")
	}
	sc := nn.FitScaler(rows)
	w := len(rows[0])
	evalSet := calib
	if len(evalSet) == 0 {
		evalSet = early
	}
	mk := func(net *nn.MLP) (*nn.PolicyNetModel, error) {
		mt := meta
		return nn.NewPolicyNetModel(net, &sc, mt)
	}
	rule := models.DecisionRule{Threshold: 0, Tuned: "the network kept is the greedy checkpoint (preference ≥ 0) with the lowest mean cost on the calibration split"}
	evaluate := func(net *nn.MLP) (float64, error) {
		pm, err := mk(net)
		if err != nil {
			return 0, err
		}
		gaps, gpus, cens, err := dataset.TableOutcomes(evalSet, func(ep *dataset.ChainEpisode) (int, error) {
			s, err := EpisodeScores(pm, rule, ep)
			if err != nil {
				return 0, err
			}
			return FirstAtLeast(s, 0), nil
		})
		if err != nil {
			return 0, err
		}
		return scenario.Summarise(gaps, gpus, cens, o.Cost).MeanCost, nil
	}
	var env nn.Env = NewTableEnv(early, o.Cost, !ro.FullStarts, o.Seed)
	envName := "tables of the probed training chains (TableEnv)"
	if ro.Env != nil {
		env, envName = ro.Env, fmt.Sprintf("%T", ro.Env)
	}
	var best *nn.MLP
	bestCost := math.Inf(1)
	checkpoint := func(net *nn.MLP, at int) error {
		c, err := evaluate(net)
		if err != nil {
			return err
		}
		if ro.Log != nil {
			ro.Log("rl checkpoint", "kind", kind, "at", at, "calib_mean_cost", c)
		}
		if c < bestCost {
			best, bestCost = net.Clone(), c
		}
		return nil
	}
	maxSteps := 1
	for i := range early {
		maxSteps = max(maxSteps, len(early[i].X)+1)
	}
	if ro.Env != nil {
		maxSteps = int(o.protocolLimit()/o.protocolTick()) + 2
	}
	params := map[string]string{"hidden": fmt.Sprint(ro.Hidden), "learning_rate": strconv.FormatFloat(ro.LearningRate, 'g', -1, 64),
		"gamma": "1", "exploring_starts": strconv.FormatBool(!ro.FullStarts), "reward": "−cost/" + strconv.FormatFloat(o.Cost.InterruptionPerHour, 'g', -1, 64), "env": envName}
	switch kind {
	case models.KindDQN:
		d, err := nn.NewDQN(w, 2, nn.DQNConfig{Hidden: ro.Hidden, LearningRate: ro.LearningRate, Gamma: 1, Batch: 64, ReplaySize: 200000,
			Warmup: 2000, TargetEvery: ro.TargetEvery, Epsilon: nn.EpsilonSchedule{Start: 1, End: 0.05, Steps: ro.Steps / 2}, Seed: o.Seed, In: &sc, Double: true})
		if err != nil {
			return nil, models.DecisionRule{}, err
		}
		every := max(ro.Steps/ro.Evals, 1)
		next := every
		for steps := 0; steps < ro.Steps; {
			_, n, err := d.RunEpisode(env, true, maxSteps)
			if err != nil {
				return nil, models.DecisionRule{}, fmt.Errorf("dqn: %w", err)
			}
			steps += n
			if o.Progress != nil {
				o.Progress("dqn steps", min(steps, ro.Steps), ro.Steps)
			}
			if steps >= next {
				if err := checkpoint(d.Network(), steps); err != nil {
					return nil, models.DecisionRule{}, err
				}
				next += every
			}
		}
		params["steps"] = strconv.Itoa(ro.Steps)
		params["batch"], params["replay"], params["target_every"], params["epsilon"] = "64", "200000", strconv.Itoa(ro.TargetEvery), fmt.Sprintf("1→0.05 over %d steps", ro.Steps/2)
		params["double"] = "true"
	case models.KindPG:
		p, err := nn.NewPG(w, 2, nn.PGConfig{Hidden: ro.Hidden, LearningRate: ro.LearningRate, Gamma: 1, Entropy: ro.Entropy, Batch: 256, Seed: o.Seed, In: &sc})
		if err != nil {
			return nil, models.DecisionRule{}, err
		}
		every := max(ro.Iterations/ro.Evals, 1)
		for it := 1; it <= ro.Iterations; it++ {
			eps := make([]nn.Episode, 0, ro.EpisodesPerIter)
			for i := 0; i < ro.EpisodesPerIter; i++ {
				ep, err := p.Play(env, false, maxSteps)
				if err != nil {
					return nil, models.DecisionRule{}, fmt.Errorf("pg: %w", err)
				}
				eps = append(eps, ep)
			}
			if _, err := p.Update(eps); err != nil {
				return nil, models.DecisionRule{}, fmt.Errorf("pg: %w", err)
			}
			if o.Progress != nil {
				o.Progress("pg updates", it, ro.Iterations)
			}
			if it%every == 0 || it == ro.Iterations {
				if err := checkpoint(p.Network(), it); err != nil {
					return nil, models.DecisionRule{}, err
				}
			}
		}
		params["iterations"], params["episodes_per_iteration"] = strconv.Itoa(ro.Iterations), strconv.Itoa(ro.EpisodesPerIter)
		params["entropy"] = strconv.FormatFloat(ro.Entropy, 'g', -1, 64)
	}
	if best == nil {
		return nil, models.DecisionRule{}, errors.New("train rl: no checkpoint")
	}
	m, err := mk(best)
	if err != nil {
		return nil, models.DecisionRule{}, err
	}
	if !o.RL.Greedy {
		if rule, _, err = tuneRule(m, rule, calib, nil, o); err != nil {
			return nil, models.DecisionRule{}, err
		}
	}
	err = models.UpdateMeta(m, func(mt *models.Meta) {
		mt.Params = params
		mt.TrainSeconds = time.Since(start).Seconds()
		mt.Metrics = map[string]float64{"calib_best_checkpoint_cost": bestCost}
	})
	return m, rule, err
}
