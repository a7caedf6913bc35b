//go:build xgboost

package models

import (
	"flag"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/models/internal/testobs"
)

var rfCompareRows = flag.Int("rf-compare-rows", 2000, "rows of the synthetic set in TestCompareRF (train 3/4, test 1/4)")

// TestCompareRF runs the rf-golearn-vs-rf-xgb harness on a synthetic set. It
// asserts only that both forests beat the constant predictor; the table (run
// with -v) compares them as classifiers (KindRF was chosen on LS6 as a
// policy, see its doc comment). For the figures:
//
//	go test -tags xgboost -run TestCompareRF -v ./models/ -args -rf-compare-rows=20000
func TestCompareRF(t *testing.T) {
	const w = 40
	n := *rfCompareRows
	X, _, y := testobs.Synth(n, w, 31)
	cut := n * 3 / 4
	train := &Dataset{Schema: testSchema(w), X: X[:cut], Y: y[:cut]}
	test := &Dataset{Schema: testSchema(w), X: X[cut:], Y: y[cut:]}
	xp := DefaultRFXGBParams()
	xp.Seed = 31
	res, err := CompareRF(train, test, xp, GolearnRFParams{}, Meta{Seed: 31, Trace: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	accC := Accuracy(Constant(Mean(train.Y), len(test.Y)), test.Y)
	for _, r := range res {
		if r.Accuracy <= accC {
			t.Errorf("%s accuracy %.3f not above the constant predictor's %.3f", r.Kind, r.Accuracy, accC)
		}
	}
	var b strings.Builder
	WriteRFTable(&b, res)
	t.Logf("synthetic %d×%d (train %d, test %d), constant accuracy %.3f\n%s", n, w, cut, n-cut, accC, b.String())
}

func BenchmarkRFGolearnTrain20kx40(b *testing.B) {
	X, _, y := testobs.Synth(20000, 40, 4)
	ds := &Dataset{Schema: testSchema(40), X: X, Y: y}
	for b.Loop() {
		if _, err := TrainRFGolearn(ds, GolearnRFParams{}, Meta{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRFGolearnPredict(b *testing.B) {
	X, _, y := testobs.Synth(20000, 40, 5)
	m, err := TrainRFGolearn(&Dataset{Schema: testSchema(40), X: X[:5000], Y: y[:5000]}, GolearnRFParams{}, Meta{})
	if err != nil {
		b.Fatal(err)
	}
	reportMem := testModelMemory(b, m)
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
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
}
