package train

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/adapt"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
)

// column is a fake model for the pure decision logic: it returns feature 0
// of each row (a predicted gap in seconds, or a probability).
type column struct{ task models.Task }

func (c column) Meta() models.Meta { return models.Meta{Task: c.task} }
func (c column) Predict(x []float64) (float64, error) {
	return x[0], nil
}
func (c column) PredictBatch(rows [][]float64, out []float64) error {
	for i, r := range rows {
		out[i] = r[0]
	}
	return nil
}
func (c column) SaveFiles(string) error { return nil }

// lowProb is a fake guard returning feature 1 of each row.
type lowProb struct{ column }

func (lowProb) PredictBatch(rows [][]float64, out []float64) error {
	for i, r := range rows {
		out[i] = r[1]
	}
	return nil
}

// episode builds a table whose tick k has predicted gap score[k] and guard probability low[k].
func episode(score, low []float64) *dataset.ChainEpisode {
	t0 := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	ep := &dataset.ChainEpisode{Nodes: 8, GPUs: 24, PredStart: t0, First: t0, PredEnd: t0.Add(time.Duration(len(score)) * time.Hour), Tick: time.Hour, Reactive: 7200}
	for k := range score {
		ep.X = append(ep.X, []float64{score[k], low[k]})
		ep.Gap = append(ep.Gap, float64(k-len(score))*3600)
		ep.Censored = append(ep.Censored, false)
	}
	return ep
}

func TestOnlineGuardFallsBack(t *testing.T) {
	rule := models.DecisionRule{Target: models.TargetGap, Threshold: 0}
	// scores reach the threshold (0) from tick 2 on
	score := []float64{-7200, -3600, 0, 600, 1200}
	for _, tc := range []struct {
		name  string
		low   []float64
		gamma float64
		want  int
	}{
		{"guard off", []float64{0.9, 0.9, 0.9, 0.9, 0.9}, 1, 2},
		{"guard sure of low load throughout: the deadline", []float64{0.9, 0.9, 0.9, 0.9, 0.9}, 0.5, -1},
		{"guard unsure: the model decides", []float64{0.1, 0.1, 0.1, 0.1, 0.1}, 0.5, 2},
		{"guard at exactly gamma blocks", []float64{0.5, 0.5, 0.5, 0.5, 0.4}, 0.5, 4},
		{"guard lifts at tick 3", []float64{0.1, 0.1, 0.8, 0.2, 0.2}, 0.5, 3},
	} {
		r := rule
		r.Online = &models.OnlineRule{Gamma: tc.gamma}
		p := &OnlinePolicy{Model: column{models.Regression}, Rule: r, Guard: lowProb{}, Thresh: adapt.New(adapt.Off)}
		got, err := p.SubmitTick(episode(score, tc.low))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: tick %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestOnlineThresholdsUseOnlyPastOutcomes(t *testing.T) {
	rule := models.DecisionRule{Target: models.TargetGap, Threshold: 0}
	score := []float64{-7200, -3600, 0, 600, 1200}
	ep := episode(score, []float64{0, 0, 0, 0, 0})
	p := &OnlinePolicy{Model: column{models.Regression}, Rule: rule, Guard: lowProb{}, Thresh: adapt.New(adapt.Config{Step: time.Hour})}
	// A late start (+5 h) that happened before the chain's first tick lowers
	// the threshold by an hour: the policy submits at tick 1 (score −1 h).
	p.Observe(adapt.Outcome{At: ep.First.Add(-time.Minute), Nodes: 8, Gap: 5 * time.Hour})
	// An outcome from after the chain's last tick must change nothing.
	p.Observe(adapt.Outcome{At: ep.PredEnd.Add(time.Hour), Nodes: 8, Gap: -9 * time.Hour})
	if got, err := p.SubmitTick(ep); err != nil || got != 1 {
		t.Errorf("tick %d (%v), want 1", got, err)
	}
	// Without the past outcome the trained threshold applies: tick 2.
	q := &OnlinePolicy{Model: column{models.Regression}, Rule: rule, Guard: lowProb{}, Thresh: adapt.New(adapt.Config{Step: time.Hour})}
	q.Observe(adapt.Outcome{At: ep.PredEnd.Add(time.Hour), Nodes: 8, Gap: -9 * time.Hour})
	if got, err := q.SubmitTick(ep); err != nil || got != 2 {
		t.Errorf("future outcome only: tick %d (%v), want 2", got, err)
	}
}

func TestTuneThresholdNoHarm(t *testing.T) {
	// Two chains with the same scores −2, −1, 0 at ticks 0–2: a heavy one
	// (deadline 20 h late) and a low one (deadline on time), and the gaps
	// of submitting at each tick. Mean cost (60/h of |gap|) by threshold:
	// −2: 1 h + 2 h; −1: 0 + 1 h; 0: 1 h + 0; 1 (never): 20 h + 0.
	heavy := dataset.ChainEpisode{Reactive: 20 * 3600, Gap: []float64{-3600, 0, 3600}, Censored: make([]bool, 3), GPUs: 3}
	low := dataset.ChainEpisode{Reactive: 0, Gap: []float64{-7200, -3600, 0}, Censored: make([]bool, 3), GPUs: 3}
	eps := []dataset.ChainEpisode{heavy, low}
	scores := [][]float64{{-2, -1, 0}, {-2, -1, 0}}
	grid := []float64{-2, -1, 0, 1}
	cost := scenario.DefaultGapCost
	if th, _ := TuneThreshold(eps, scores, grid, cost); th != -1 {
		t.Errorf("unconstrained threshold %g, want −1 (1 h each at −1 and 0; ties to the smaller)", th)
	}
	// −1 makes the low chain overlap by an hour where the deadline had no
	// gap: the constraint leaves 0 and 1, and 0 costs less.
	if th, c := TuneThresholdNoHarm(eps, scores, grid, cost); th != 0 || c != 30 {
		t.Errorf("no-harm threshold %g (mean cost %g), want 0 (30)", th, c)
	}
	// Every candidate harms: the latest is returned.
	if th, _ := TuneThresholdNoHarm(eps, scores, []float64{-2, -1}, cost); th != -1 {
		t.Errorf("all harmful: %g, want the latest candidate −1", th)
	}
}

// TestGapLoss: the guard and the step are chosen by the fit's cost: |gap|
// in seconds for the published cost; for the training workload's (60/h of
// interruption, 2.5/h of overlap) an hour late costs 60 and an hour early 2.5.
func TestGapLoss(t *testing.T) {
	ep := &dataset.ChainEpisode{GPUs: 24}
	def := gapLoss(scenario.DefaultGapCost)
	if def(ep, 3600) != 3600 || def(ep, -1800) != 1800 {
		t.Errorf("published cost: %g, %g; want 3600, 1800", def(ep, 3600), def(ep, -1800))
	}
	tr := gapLoss(scenario.GapCost{InterruptionPerHour: 60, OverlapPerHour: 2.5})
	if tr(ep, 3600) != 60 || tr(ep, -3600) != 2.5 || tr(ep, -7200) != 5 {
		t.Errorf("training cost: %g, %g, %g; want 60, 2.5, 5", tr(ep, 3600), tr(ep, -3600), tr(ep, -7200))
	}
}
