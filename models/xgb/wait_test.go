//go:build xgboost

package xgb

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
	"github.com/mirage-gpu/mirage/provisioner"
)

func TestWaitPredictorSaveLoad(t *testing.T) {
	// Synthetic rows of the real schema's width; wait grows with column 0.
	X, y, _ := testobs.Synth(1500, features.NumWaitFeatures(), 41)
	for i := range y {
		y[i] = 600 * (X[i][0] + 1)
	}
	var ms [3]models.Model
	for i, q := range models.WaitQuantiles {
		p := DefaultQuantileParams(q)
		p.Rounds, p.MinChildWeight, p.Seed, p.Threads = 50, 20, 41, 2
		m, err := TrainXGB(&models.Dataset{Schema: features.WaitSchema(), X: X, Y: y}, p, models.Meta{Kind: models.KindXGB, Seed: 41})
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = m
	}
	w, err := models.NewWaitPredictor(ms[0], ms[1], ms[2])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.SaveWaitPredictor(dir, w); err != nil {
		t.Fatal(err)
	}
	back, err := models.LoadWaitPredictor(dir)
	if err != nil {
		t.Fatal(err)
	}
	obs := features.WaitObservation(testobs.T0, testobs.Observation().Snapshot, nil, provisioner.SubmitRequest{Nodes: 1, GPUs: 4, TimeLimit: 48 * time.Hour})
	a, err := w.Predict(obs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := back.Predict(obs)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a.P10 > a.P50 || a.P50 > a.P90 {
		t.Errorf("before %+v, after load %+v", a, b)
	}
}
