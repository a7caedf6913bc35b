//go:build xgboost

package xgb

import (
	"math"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
)

// testAgree asserts every leaves prediction matches libxgboost's to 1e-5
// relative, measured against max(|libxgboost|, 1): libxgboost sums tree
// outputs in float32 and leaves in float64, so a prediction that is a near
// cancellation of larger tree values (0.0044 from trees of ±10) differs by
// float32 rounding of the partial sums (≈1e-7 absolute), not of the result.
func testAgree(t *testing.T, m *XGBModel, X [][]float64) {
	t.Helper()
	b, err := LoadBooster(m.Raw())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lib, err := b.Predict(X)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, len(X))
	if err := m.PredictBatch(X, got); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range X {
		den := math.Max(math.Abs(lib[i]), 1)
		if rel := math.Abs(got[i]-lib[i]) / den; rel > 1e-5 {
			if bad < 5 {
				t.Errorf("row %d: leaves %v, libxgboost %v (rel %.2g)", i, got[i], lib[i], rel)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d predictions disagree", bad, len(X))
	}
}

func TestXGBLeavesAgreement(t *testing.T) {
	const w = 12
	X, yReg, yCls := testobs.Synth(4000, w, 1)
	trainX, testX := X[:3000], X[3000:]
	tests := []struct {
		name   string
		kind   models.Kind
		params XGBParams
		y      []float64
	}{
		{"reg:squarederror", models.KindXGB, func() XGBParams { p := DefaultXGBParams(); p.Rounds = 60; return p }(), yReg},
		{"binary:logistic", models.KindXGB, func() XGBParams { p := DefaultXGBParams(); p.Objective = "binary:logistic"; p.Rounds = 60; return p }(), yCls},
		{"rf-mode binary:logistic", models.KindRFXGB, func() XGBParams { p := DefaultRFXGBParams(); p.NumParallelTree = 30; return p }(), yCls},
		{"rf-mode reg:squarederror", models.KindRFXGB, func() XGBParams {
			p := DefaultRFXGBParams()
			p.Objective = "reg:squarederror"
			p.NumParallelTree = 30
			return p
		}(), yReg},
		{"exact tree method", models.KindXGB, func() XGBParams { p := DefaultXGBParams(); p.TreeMethod = "exact"; p.Rounds = 20; return p }(), yReg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.params
			p.Seed, p.Threads = 7, 2
			ds := &models.Dataset{Schema: modeltest.Schema(w), X: trainX, Y: tt.y[:3000]}
			m, err := TrainXGB(ds, p, models.Meta{Kind: tt.kind, Seed: 7, Trace: "synthetic"})
			if err != nil {
				t.Fatal(err)
			}
			testAgree(t, m, testX)
			// Exact ties with thresholds: every integer value of the integer columns.
			var ties [][]float64
			for v := 0.0; v <= 20; v++ {
				row := append([]float64(nil), testX[0]...)
				row[0], row[1], row[2] = v, v, v
				ties = append(ties, row)
			}
			testAgree(t, m, ties)
		})
	}
}

func TestXGBBeatsConstantAndRoundTrips(t *testing.T) {
	const w = 12
	X, yReg, yCls := testobs.Synth(3000, w, 2)
	for _, tt := range []struct {
		kind models.Kind
		p    XGBParams
		y    []float64
	}{
		{models.KindXGB, DefaultXGBParams(), yReg},
		{models.KindRFXGB, DefaultRFXGBParams(), yCls},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			tt.p.Seed, tt.p.Threads = 3, 2
			if tt.kind == models.KindXGB {
				tt.p.Rounds = 80
			}
			m, err := TrainXGB(&models.Dataset{Schema: modeltest.Schema(w), X: X[:2000], Y: tt.y[:2000]}, tt.p, models.Meta{Kind: tt.kind, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			testX, testY := X[2000:], tt.y[2000:]
			pred := make([]float64, len(testX))
			if err := m.PredictBatch(testX, pred); err != nil {
				t.Fatal(err)
			}
			c := models.Mean(tt.y[:2000])
			base := models.Constant(c, len(testY))
			if m.Meta().Task == models.Regression {
				if got, cst := models.MAE(pred, testY), models.MAE(base, testY); got > 0.5*cst {
					t.Errorf("MAE %.3f not below half the constant predictor's %.3f", got, cst)
				}
			} else {
				if got, cst := testobs.LogLoss(pred, testY), testobs.LogLoss(base, testY); got >= cst {
					t.Errorf("log loss %.3f not below the constant predictor's %.3f", got, cst)
				}
				if auc := models.AUC(pred, testY); auc < 0.8 {
					t.Errorf("AUC %.3f < 0.8", auc)
				}
			}
			dir := t.TempDir()
			if err := models.Save(dir, m); err != nil {
				t.Fatal(err)
			}
			back, err := models.Load(dir, modeltest.Schema(w))
			if err != nil {
				t.Fatal(err)
			}
			if back.Meta().Libraries["libxgboost"] == "" || back.Meta().Params["objective"] != tt.p.Objective {
				t.Errorf("meta not round-tripped: %+v", back.Meta())
			}
			got := make([]float64, len(testX))
			if err := back.PredictBatch(testX, got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != pred[i] {
					t.Fatalf("row %d: %v after load, %v before", i, got[i], pred[i])
				}
			}
		})
	}
}

func BenchmarkXGBTrain20kx40(b *testing.B) {
	X, y, _ := testobs.Synth(20000, 40, 4)
	ds := &models.Dataset{Schema: modeltest.Schema(40), X: X, Y: y}
	p := DefaultXGBParams()
	p.Seed = 1
	for b.Loop() {
		if _, err := TrainXGB(ds, p, models.Meta{Kind: models.KindXGB}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRFXGBTrain20kx40(b *testing.B) {
	X, _, y := testobs.Synth(20000, 40, 4)
	ds := &models.Dataset{Schema: modeltest.Schema(40), X: X, Y: y}
	p := DefaultRFXGBParams()
	p.Seed = 1
	for b.Loop() {
		if _, err := TrainXGB(ds, p, models.Meta{Kind: models.KindRFXGB}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchXGBPredict(b *testing.B, kind models.Kind, p XGBParams) {
	X, yReg, yCls := testobs.Synth(20000, 40, 5)
	y := yReg
	if kind == models.KindRFXGB {
		y = yCls
	}
	p.Seed = 1
	m, err := TrainXGB(&models.Dataset{Schema: modeltest.Schema(40), X: X, Y: y}, p, models.Meta{Kind: kind})
	if err != nil {
		b.Fatal(err)
	}
	reportMem := modeltest.ModelMemory(b, m)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := m.Predict(X[i%len(X)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportMem()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/decision")
}

func BenchmarkXGBPredict(b *testing.B)   { benchXGBPredict(b, models.KindXGB, DefaultXGBParams()) }
func BenchmarkRFXGBPredict(b *testing.B) { benchXGBPredict(b, models.KindRFXGB, DefaultRFXGBParams()) }

// TestVariance is the hand check of the target scale quantile fits standardise by.
func TestVariance(t *testing.T) {
	if got := variance([]float64{1, 3}); got != 1 {
		t.Errorf("variance = %v", got)
	}
}
