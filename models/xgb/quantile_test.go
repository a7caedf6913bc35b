//go:build xgboost

package xgb

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
)

// testHetero returns rows whose target spread depends on x1: y = 100·x0 + (10 + 90·x1)·N(0,1), x uniform in [0,1].
func testHetero(n int, seed uint64) ([][]float64, []float64) {
	r := rand.New(rand.NewPCG(seed, 9))
	X := make([][]float64, n)
	y := make([]float64, n)
	for i := range X {
		X[i] = []float64{r.Float64(), r.Float64(), r.Float64()}
		y[i] = 100*X[i][0] + (10+90*X[i][1])*r.NormFloat64()
	}
	return X, y
}

func TestXGBQuantileCoverage(t *testing.T) {
	X, y := testHetero(8000, 1)
	trainX, trainY, testX, testY := X[:6000], y[:6000], X[6000:], y[6000:]
	sorted := append([]float64(nil), trainY...)
	sort.Float64s(sorted)
	for _, q := range []float64{0.1, 0.9} {
		p := DefaultQuantileParams(q)
		p.Seed, p.Threads = 1, 2
		m, err := TrainXGB(&models.Dataset{Schema: modeltest.Schema(3), X: trainX, Y: trainY}, p, models.Meta{Kind: models.KindXGB, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		pred := make([]float64, len(testX))
		if err := m.PredictBatch(testX, pred); err != nil {
			t.Fatal(err)
		}
		below := 0
		for i := range testY {
			if testY[i] < pred[i] {
				below++
			}
		}
		cov := float64(below) / float64(len(testY))
		cst := features.Percentile(sorted, q)
		pl, plC := models.Pinball(pred, testY, q), models.Pinball(models.Constant(cst, len(testY)), testY, q)
		t.Logf("q=%.1f: share below %.3f, pinball %.2f (constant quantile %.2f)", q, cov, pl, plC)
		if math.Abs(cov-q) > 0.04 {
			t.Errorf("q=%.1f: %.3f of held-out targets below the prediction", q, cov)
		}
		if pl >= 0.9*plC {
			t.Errorf("q=%.1f: pinball loss %.2f not 10%% below the constant quantile's %.2f", q, pl, plC)
		}
		// leaves (with the stored output transform) agrees with libxgboost after a save/load.
		dir := t.TempDir()
		if err := models.Save(dir, m); err != nil {
			t.Fatal(err)
		}
		back, err := models.Load(dir, modeltest.Schema(3))
		if err != nil {
			t.Fatal(err)
		}
		b, err := LoadBooster(m.Raw())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := b.Predict(testX)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		o := back.Meta().Output
		for i := range testX {
			// Compare raw outputs (the transform multiplies float32 rounding by Scale).
			got, _ := back.Predict(testX[i])
			gotRaw := (got - o.Shift) / o.Scale
			if math.Abs(gotRaw-raw[i]) > 1e-5*math.Max(math.Abs(raw[i]), 1) || got != pred[i] {
				t.Fatalf("row %d: leaves raw %v, libxgboost raw %v; %v after load, %v before", i, gotRaw, raw[i], got, pred[i])
			}
		}
	}
}
