//go:build cgo

package forest

import (
	"testing"

	"github.com/sjwhitworth/golearn/base"
	"github.com/sjwhitworth/golearn/ensemble"
	"github.com/sjwhitworth/golearn/trees"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
)

func TestRFGolearnBeatsConstantAndRoundTrips(t *testing.T) {
	const w = 8
	X, _, y := testobs.Synth(2500, w, 21)
	ds := &models.Dataset{Schema: modeltest.Schema(w), X: X[:2000], Y: y[:2000]}
	m, err := TrainRFGolearn(ds, GolearnRFParams{Trees: 20}, models.Meta{Seed: 21, Trace: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	testX, testY := X[2000:], y[2000:]
	pred := make([]float64, len(testX))
	if err := m.PredictBatch(testX, pred); err != nil {
		t.Fatal(err)
	}
	base := models.Constant(models.Mean(ds.Y), len(testY))
	acc, accC := models.Accuracy(pred, testY), models.Accuracy(base, testY)
	if acc <= accC {
		t.Errorf("accuracy %.3f not above the constant predictor's %.3f", acc, accC)
	}
	if ll, llC := testobs.LogLoss(pred, testY), testobs.LogLoss(base, testY); ll >= llC {
		t.Errorf("log loss %.3f not below the constant predictor's %.3f", ll, llC)
	}
	t.Logf("accuracy %.3f (constant %.3f), AUC %.3f", acc, accC, models.AUC(pred, testY))

	dir := t.TempDir()
	if err := models.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	back, err := models.Load(dir, modeltest.Schema(w))
	if err != nil {
		t.Fatal(err)
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
}

// TestRFGolearnFlattenMatchesGolearn checks the flattened trees reproduce
// golearn's own majority vote wherever the vote is not tied.
func TestRFGolearnFlattenMatchesGolearn(t *testing.T) {
	const w = 6
	X, _, y := testobs.Synth(800, w, 22)
	ds := &models.Dataset{Schema: modeltest.Schema(w), X: X[:600], Y: y[:600]}
	inst, err := golearnInstances(ds)
	if err != nil {
		t.Fatal(err)
	}
	rf := ensemble.NewRandomForest(7, 3) // odd: no ties
	if err := rf.Fit(inst); err != nil {
		t.Fatal(err)
	}
	m := &RFGolearnModel{width: w}
	for _, c := range rf.Model.Models {
		var nodes []flatNode
		if _, err := flatten(testRootOf(t, c), &nodes); err != nil {
			t.Fatal(err)
		}
		m.trees = append(m.trees, nodes)
	}
	test := &models.Dataset{Schema: ds.Schema, X: X[600:], Y: y[600:]}
	tinst, err := golearnInstances(test)
	if err != nil {
		t.Fatal(err)
	}
	out, err := rf.Predict(tinst)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range test.X {
		want := base.GetClass(out, i) == "1"
		if got := m.Votes(x) > 0.5; got != want {
			t.Errorf("row %d: flattened vote %v, golearn %v", i, got, want)
		}
	}
}

func testRootOf(t *testing.T, c base.Classifier) *trees.DecisionTreeNode {
	t.Helper()
	tr, ok := c.(*trees.ID3DecisionTree)
	if !ok {
		t.Fatalf("tree is %T", c)
	}
	return tr.Root
}
