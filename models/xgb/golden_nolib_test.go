package xgb

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
)

// xgbGolden is testdata/xgb-small/golden.json: rows and libxgboost 1.7.4's predictions.
type xgbGolden struct {
	Rows        [][]float64 `json:"rows"`
	Predictions []float64   `json:"predictions"`
}

// TestXGBGolden serves a model written by libxgboost 1.7 with leaves alone
// (no xgboost build tag) and compares with libxgboost's recorded predictions.
func TestXGBGolden(t *testing.T) {
	dir := filepath.Join("testdata", "xgb-small")
	m, err := models.Load(dir, modeltest.Schema(6))
	if err != nil {
		t.Fatal(err)
	}
	var g xgbGolden
	b, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if m.Meta().Task != models.Classification {
		t.Errorf("task %s, want classification", m.Meta().Task)
	}
	for i, row := range g.Rows {
		got, err := m.Predict(row)
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(got-g.Predictions[i]) / math.Max(math.Abs(g.Predictions[i]), 1); rel > 1e-5 {
			t.Errorf("row %d: leaves %v, libxgboost %v", i, got, g.Predictions[i])
		}
	}
	if _, err := m.Predict([]float64{1, 2}); !errors.Is(err, models.ErrFeatureCount) {
		t.Errorf("short vector: err = %v, want ErrFeatureCount", err)
	}
}

func TestXGBGoldenSchemaMismatch(t *testing.T) {
	want := modeltest.Schema(6)
	want.Version = 2
	_, err := models.Load(filepath.Join("testdata", "xgb-small"), want)
	var sm *features.SchemaMismatchError
	if !errors.Is(err, features.ErrSchemaMismatch) || !errors.As(err, &sm) {
		t.Fatalf("err = %v, want a *SchemaMismatchError", err)
	}
	if sm.Model.Version != 1 || sm.Want.Version != 2 {
		t.Errorf("versions %d/%d", sm.Model.Version, sm.Want.Version)
	}
}

func TestConvertRejectsMalformed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "xgb-small", XGBModelFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 3, 4, 100, 140, 200, 400, 1000} {
		if n >= len(raw) {
			continue
		}
		if _, _, err := ConvertXGB17ForLeaves(raw[:n]); !errors.Is(err, models.ErrBadModel) {
			t.Errorf("truncated to %d bytes: err = %v, want ErrBadModel", n, err)
		}
	}
	conv, hd, err := ConvertXGB17ForLeaves(raw)
	if err != nil {
		t.Fatal(err)
	}
	if hd.Objective != "binary:logistic" || hd.Booster != "gbtree" || hd.NumFeature != 6 || hd.NumTrees != 5 {
		t.Errorf("header %+v", hd)
	}
	if !bytes.HasPrefix(raw, []byte("binf")) || bytes.HasPrefix(conv, []byte("binf")) || len(conv) != len(raw)-4 {
		t.Errorf("magic not stripped")
	}
}

// FuzzConvertXGB17 checks the converter never panics nor over-allocates on
// arbitrary bytes, and that leaves accepts whatever it accepts.
func FuzzConvertXGB17(f *testing.F) {
	raw, err := os.ReadFile(filepath.Join("testdata", "xgb-small", XGBModelFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte("binf"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, err := ConvertXGB17ForLeaves(b); err != nil {
			return
		}
		_, _ = NewXGBModel(b, models.Meta{Kind: models.KindXGB})
	})
}
