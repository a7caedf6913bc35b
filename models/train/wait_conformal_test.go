package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/xgb"
)

// Split conformal's rank, worked by hand: of 10 scores, coverage 0.85
// takes the ⌈11 × 0.85⌉ = 10th smallest, 0.8 the ⌈8.8⌉ = 9th, 0.5 the
// ⌈5.5⌉ = 6th; a rank past n takes the largest.
func TestConformalQuantile(t *testing.T) {
	for _, tc := range []struct {
		cov, want float64
	}{{0.85, 10}, {0.8, 9}, {0.5, 6}, {0.99, 10}} {
		scores := []float64{7, 3, 10, 1, 9, 2, 8, 4, 6, 5}
		if got := conformalQuantile(scores, tc.cov); got != tc.want {
			t.Errorf("coverage %v: %v, want %v", tc.cov, got, tc.want)
		}
	}
}

// The calibrated interval covers ConformalCoverage of new jobs from the
// same distribution, whatever the quantile models fitted. Here the wait
// does not depend on the features at all, and the training jobs are few
// for their noise, so the fitted p10–p90 alone covers a share well off
// 85 %; the calibrated one covers 85 % ± 3 points of 4,000 new jobs
// (binomial standard error 0.6 points; the fits add more). Without the
// calibration (CalibShare < 0) no widening is recorded.
func TestWaitIntervalCalibrated(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	nf := features.NumWaitFeatures()
	t0 := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	sample := func(i int) dataset.WaitSample {
		x := make([]float64, nf)
		for k := range x {
			x[k] = rng.Float64()
		}
		// log-normal waits around 10 minutes, independent of x
		return dataset.WaitSample{ID: "j", Submit: t0.Add(time.Duration(i) * time.Minute), X: x, Wait: 600 * math.Exp(rng.NormFloat64())}
	}
	train := &dataset.WaitData{Schema: features.WaitSchema()}
	for i := range 1500 {
		train.Samples = append(train.Samples, sample(i))
	}
	test := &dataset.WaitData{Schema: features.WaitSchema()}
	for i := range 4000 {
		test.Samples = append(test.Samples, sample(1500+i))
	}
	cover := func(o WaitTrainOptions) (float64, string) {
		o.Seed = 1
		w, _, err := TrainWaitPredictor(train, nil, o)
		testenv.XGBoost(t, !errors.Is(err, xgb.ErrNoXGBoost))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ValidateWaitPredictor(w, test)
		if err != nil {
			t.Fatal(err)
		}
		return rep.All.Coverage, w.Models[0].Meta().Params["conformal"]
	}
	raw, note := cover(WaitTrainOptions{CalibShare: -1})
	if note != "" {
		t.Errorf("no calibration asked, but the meta says %q", note)
	}
	if math.Abs(raw-ConformalCoverage) < 0.05 {
		t.Fatalf("the fitted interval alone covers %.3f: this case cannot show what the calibration does", raw)
	}
	cal, note := cover(WaitTrainOptions{})
	t.Logf("p10–p90 coverage of new jobs: fitted %.3f, calibrated %.3f (%s)", raw, cal, note)
	if math.Abs(cal-ConformalCoverage) > 0.03 {
		t.Errorf("calibrated coverage %.3f, want %.2f ± 0.03", cal, ConformalCoverage)
	}
	if note == "" {
		t.Error("the calibration is not recorded in the meta")
	}
}
