//go:build xgboost

package xgb

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
)

// updateGolden (-update) rewrites golden files under testdata/ (see TestXGBGoldenUpdate).
var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestXGBGoldenUpdate rewrites testdata/xgb-small (a small libxgboost 1.7
// model and libxgboost's own predictions on fixed rows) when run with -update;
// the untagged TestXGBGolden then checks leaves against it without libxgboost.
func TestXGBGoldenUpdate(t *testing.T) {
	if !*updateGolden {
		t.Skip("run with -update to regenerate testdata/xgb-small") // opt-in, never in CI: rewrites the golden files TestXGBGolden checks
	}
	const w = 6
	X, _, yCls := testobs.Synth(500, w, 11)
	p := DefaultXGBParams()
	p.Objective, p.Rounds, p.MaxDepth, p.Seed, p.Threads = "binary:logistic", 5, 3, 11, 1
	m, err := TrainXGB(&models.Dataset{Schema: modeltest.Schema(w), X: X, Y: yCls}, p, models.Meta{Kind: models.KindXGB, Seed: 11, Trace: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadBooster(m.Raw())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rows := X[:20]
	lib, err := b.Predict(rows)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "xgb-small")
	if err := models.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	g, _ := json.MarshalIndent(xgbGolden{Rows: rows, Predictions: lib}, "", " ")
	if err := os.WriteFile(filepath.Join(dir, "golden.json"), g, 0o644); err != nil {
		t.Fatal(err)
	}
}
