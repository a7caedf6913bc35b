package train

import (
	"context"
	"errors"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/xgb"
)

// TestWaitPredictorOnSimulatedJobs trains the wait predictor on the
// synthetic trace's first 9 days and checks it on days 9–12: its median
// error beats the constant predictor (the training median wait), its
// interval is ordered, and Slurm's estimates were recorded.
func TestWaitPredictorOnSimulatedJobs(t *testing.T) {
	sc := modeltest.Scenario(t)
	cut := sc.First.Add(9 * 24 * time.Hour)
	train, err := dataset.GenerateWaitData(context.Background(), sc, dataset.WaitGenOptions{Until: cut})
	if err != nil {
		t.Fatal(err)
	}
	valid, err := dataset.GenerateWaitData(context.Background(), sc, dataset.WaitGenOptions{From: cut, Until: cut.Add(3 * 24 * time.Hour), Estimates: true})
	if err != nil {
		t.Fatal(err)
	}
	w, rep, err := TrainWaitPredictor(train, valid, WaitTrainOptions{Seed: 2, Params: func(q float64) xgb.XGBParams {
		p := DefaultWaitParams(q)
		p.Rounds = 100
		return p
	}})
	testenv.XGBoost(t, !errors.Is(err, xgb.ErrNoXGBoost))
	if err != nil {
		t.Fatal(err)
	}
	var tw []float64
	for _, s := range train.Samples {
		tw = append(tw, s.Wait)
	}
	sort.Float64s(tw)
	med := features.Percentile(tw, 0.5)
	var yv []float64
	for _, s := range valid.Samples {
		yv = append(yv, s.Wait)
	}
	constant := ScoreWaits(models.Constant(med, len(yv)), yv, nil, nil)
	t.Logf("%d/%d jobs; median |error| %.0f s (constant %.0f s; Slurm %.0f s on %d jobs), coverage %.2f",
		len(train.Samples), len(valid.Samples), rep.All.MedianAbsErr, constant.MedianAbsErr, rep.Slurm.MedianAbsErr, rep.Slurm.N, rep.All.Coverage)
	if rep.All.MedianAbsErr >= constant.MedianAbsErr {
		t.Errorf("median |error| %.0f s does not beat the constant predictor's %.0f s", rep.All.MedianAbsErr, constant.MedianAbsErr)
	}
	if rep.Slurm.N == 0 || rep.Slurm.N+rep.NoEstimate != len(valid.Samples) {
		t.Errorf("Slurm estimates for %d jobs, %d without, of %d", rep.Slurm.N, rep.NoEstimate, len(valid.Samples))
	}
	if _, err := w.Predict(features.WaitObservation(cut, nil, nil, dataset.WaitRequest(&sc.Specs[0]))); err == nil {
		t.Error("an observation without a snapshot must be refused")
	}
	// Every sample's features are the observation one second before its arrival.
	if got := valid.Samples[0].X; len(got) != features.NumWaitFeatures() {
		t.Errorf("feature width %d", len(got))
	}
	if m := w.Models[1].Meta(); m.Output == nil || m.Output.Expm1Unit != 60 || m.Params["wait_quantile"] != "0.5" || m.Metrics["valid_n"] != float64(len(valid.Samples)) {
		t.Errorf("p50 meta %+v", m)
	}
	if math.IsNaN(rep.All.Coverage) || rep.All.Coverage <= 0 {
		t.Errorf("coverage %v", rep.All.Coverage)
	}
}

func TestScoreWaits(t *testing.T) {
	// errors 0, 300, 1200, 7200 s: median 750; within 10 min 2 of 4; within 1 h 3 of 4; y inside [lo, hi] for 3 of 4.
	m := ScoreWaits([]float64{0, 300, 1200, 7200}, []float64{0, 0, 0, 0}, []float64{0, 0, 0, 1}, []float64{1, 1, 1, 2})
	if m.MedianAbsErr != 750 || m.Within10m != 0.5 || m.Within1h != 0.75 || m.Coverage != 0.75 {
		t.Errorf("%+v", m)
	}
}

func TestDecisionRuleBySizeAndQuantile(t *testing.T) {
	r := models.DecisionRule{Threshold: -1, BySize: []models.SizeThreshold{{Nodes: 1, Threshold: 5}, {Nodes: 8, Threshold: -3}}}
	// nearest size: 2 → 1 (|1|) ; 4 → 1 (3) vs 8 (4): 1; 5 → 8 (3) vs 1 (4): 8; 16 → 8.
	for nodes, want := range map[int]float64{1: 5, 2: 5, 4: 5, 5: -3, 8: -3, 16: -3} {
		if got := r.For(nodes); got != want {
			t.Errorf("For(%d) = %v, want %v", nodes, got, want)
		}
	}
	if !r.Submit(5, 1) || r.Submit(4.9, 1) || !r.Submit(-3, 8) {
		t.Error("Submit disagrees with For")
	}
	if (models.DecisionRule{Threshold: 2}).For(3) != 2 {
		t.Error("without BySize the threshold applies")
	}
	// a/(a+b): symmetric 60/60 → 0.5; interruption 30, overlap 10 + 5/GPU on 4 GPUs → 30/60 = 0.5; 90 vs 10 → 0.9.
	for _, tt := range []struct {
		c    scenario.GapCost
		gpus int
		want float64
	}{{scenario.DefaultGapCost, 24, 0.5}, {scenario.GapCost{InterruptionPerHour: 30, OverlapPerHour: 10, OverlapPerGPUHour: 5}, 4, 0.5}, {scenario.GapCost{InterruptionPerHour: 90, OverlapPerHour: 10}, 1, 0.9}} {
		if got := DecisionQuantile(tt.c, tt.gpus); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("DecisionQuantile(%+v, %d) = %v, want %v", tt.c, tt.gpus, got, tt.want)
		}
	}
}
