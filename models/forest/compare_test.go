//go:build xgboost

package forest

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
	"github.com/mirage-gpu/mirage/models/xgb"
)

var rfCompareRows = flag.Int("rf-compare-rows", 2000, "rows of the synthetic set in TestCompareRF (train 3/4, test 1/4)")

// TestCompareRF runs the rf-golearn-vs-rf-xgb harness on a synthetic set. It
// asserts only that both forests beat the constant predictor; the table (run
// with -v) compares them as classifiers (KindRF was chosen on LS6 as a
// policy, see its doc comment). For the figures:
//
//	go test -tags xgboost -run TestCompareRF -v ./models/forest/ -args -rf-compare-rows=20000
func TestCompareRF(t *testing.T) {
	const w = 40
	n := *rfCompareRows
	X, _, y := testobs.Synth(n, w, 31)
	cut := n * 3 / 4
	train := &models.Dataset{Schema: modeltest.Schema(w), X: X[:cut], Y: y[:cut]}
	test := &models.Dataset{Schema: modeltest.Schema(w), X: X[cut:], Y: y[cut:]}
	xp := xgb.DefaultRFXGBParams()
	xp.Seed = 31
	res, err := CompareRF(train, test, xp, GolearnRFParams{}, models.Meta{Seed: 31, Trace: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	accC := models.Accuracy(models.Constant(models.Mean(train.Y), len(test.Y)), test.Y)
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
	ds := &models.Dataset{Schema: modeltest.Schema(40), X: X, Y: y}
	for b.Loop() {
		if _, err := TrainRFGolearn(ds, GolearnRFParams{}, models.Meta{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRFGolearnPredict(b *testing.B) {
	X, _, y := testobs.Synth(20000, 40, 5)
	m, err := TrainRFGolearn(&models.Dataset{Schema: modeltest.Schema(40), X: X[:5000], Y: y[:5000]}, GolearnRFParams{}, models.Meta{})
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
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
}

// RFResult is one forest's score in CompareRF.
type RFResult struct {
	Kind       models.Kind  // KindRFXGB or KindRFGolearn
	Accuracy   float64      // at probability 0.5
	AUC        float64      // area under the ROC curve
	LogLoss    float64      // mean binary cross-entropy
	FitSeconds float64      // wall time of the fit
	PredictUS  float64      // mean µs per single-row Predict over the test set
	Model      models.Model // the fitted model
}

// WriteRFTable writes CompareRF's results as a Markdown table.
func WriteRFTable(w io.Writer, res []RFResult) {
	fmt.Fprintln(w, "| model | accuracy | AUC | log loss | fit (s) | predict (µs/row) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range res {
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.2f | %.1f |\n", r.Kind, r.Accuracy, r.AUC, r.LogLoss, r.FitSeconds, r.PredictUS)
	}
}

// CompareRF fits both random forests on the same training set (Y 0/1) and
// scores them on the same test set as classifiers (KindRF was chosen on LS6
// as a submission policy; see its doc comment).
func CompareRF(train, test *models.Dataset, xp xgb.XGBParams, gp GolearnRFParams, meta models.Meta) ([]RFResult, error) {
	var res []RFResult
	score := func(k models.Kind, m models.Model, fit float64) error {
		p := make([]float64, len(test.X))
		start := time.Now()
		for i, x := range test.X {
			v, err := m.Predict(x)
			if err != nil {
				return err
			}
			p[i] = v
		}
		us := float64(time.Since(start).Microseconds()) / float64(len(test.X))
		res = append(res, RFResult{Kind: k, Accuracy: models.Accuracy(p, test.Y), AUC: models.AUC(p, test.Y), LogLoss: testobs.LogLoss(p, test.Y), FitSeconds: fit, PredictUS: us, Model: m})
		return nil
	}
	mx := meta
	mx.Kind = models.KindRFXGB
	x, err := xgb.TrainXGB(train, xp, mx)
	if err != nil {
		return nil, fmt.Errorf("compare rf: %w", err)
	}
	if err := score(models.KindRFXGB, x, x.Meta().TrainSeconds); err != nil {
		return nil, err
	}
	g, err := TrainRFGolearn(train, gp, meta)
	if err != nil {
		return nil, fmt.Errorf("compare rf: %w", err)
	}
	if err := score(models.KindRFGolearn, g, g.Meta().TrainSeconds); err != nil {
		return nil, err
	}
	return res, nil
}
