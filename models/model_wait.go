package models

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
)

// WaitQuantiles are the quantiles a WaitPredictor serves, in order, and the
// names of its sub-directories ("p10", "p50", "p90").
var WaitQuantiles = []float64{0.1, 0.5, 0.9}

// WaitDirs names the sub-directory of each WaitQuantiles entry.
var WaitDirs = []string{"p10", "p50", "p90"}

// WaitEstimate is a predicted queue wait with an interval.
type WaitEstimate struct {
	P10, P50, P90 time.Duration // quantiles of the wait
}

// WaitPredictor answers "how long would a job of this shape wait if
// submitted now": three regression models of the wait in seconds (quantile
// XGBoost, see DefaultQuantileParams) on the wait feature schema, with the
// job as the successor and no predecessor (pred_present = 0).
type WaitPredictor struct {
	Models [3]Model // p10, p50, p90
}

// NewWaitPredictor checks that the three models use the current wait schema and
// are regressions.
func NewWaitPredictor(p10, p50, p90 Model) (*WaitPredictor, error) {
	w := &WaitPredictor{Models: [3]Model{p10, p50, p90}}
	for i, m := range w.Models {
		if m == nil {
			return nil, fmt.Errorf("wait predictor: %s model missing", WaitDirs[i])
		}
		if err := features.CheckSchema(m.Meta().Schema, features.WaitSchema()); err != nil {
			return nil, fmt.Errorf("wait predictor %s: %w", WaitDirs[i], err)
		}
		if m.Meta().Task != Regression {
			return nil, fmt.Errorf("wait predictor %s: task %s, want regression", WaitDirs[i], m.Meta().Task)
		}
	}
	return w, nil
}

// SaveWaitPredictor writes the three models into dir/p10, dir/p50, dir/p90.
func SaveWaitPredictor(dir string, w *WaitPredictor) error {
	for i, m := range w.Models {
		if err := Save(filepath.Join(dir, WaitDirs[i]), m); err != nil {
			return err
		}
	}
	return nil
}

// LoadWaitPredictor reads a directory written by SaveWaitPredictor.
func LoadWaitPredictor(dir string) (*WaitPredictor, error) {
	var ms [3]Model
	for i, d := range WaitDirs {
		m, err := Load(filepath.Join(dir, d), features.WaitSchema())
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return NewWaitPredictor(ms[0], ms[1], ms[2])
}

// Predict returns the wait interval for an observation built by
// WaitObservation. Quantiles are sorted (independently trained quantile
// models can cross) and clamped at zero.
func (w *WaitPredictor) Predict(obs *provisioner.Observation) (WaitEstimate, error) {
	var buf [128]float64
	x, err := features.AppendWaitFeatures(buf[:0], obs)
	if err != nil {
		return WaitEstimate{}, fmt.Errorf("predict wait: %w", err)
	}
	var q [3]float64
	for i, m := range w.Models {
		if q[i], err = m.Predict(x); err != nil {
			return WaitEstimate{}, fmt.Errorf("predict wait %s: %w", WaitDirs[i], err)
		}
		q[i] = max(q[i], 0)
	}
	s := q[:]
	slices.Sort(s)
	d := func(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)).Round(time.Second) }
	return WaitEstimate{P10: d(q[0]), P50: d(q[1]), P90: d(q[2])}, nil
}

// WaitHistoryParam is the meta.json param that says where the wait
// predictor's training history came from: WaitHistoryRecorded when its
// history features were the trace's recorded jobs (`mirage train
// --wait-recorded`); absent when they were the replay's.
const (
	WaitHistoryParam    = "history"
	WaitHistoryRecorded = "recorded"
)

// RecordedHistory reports whether w learned from the recorded history, so
// a replayed answer (predict-wait --trace, the validation against recorded
// waits) must show it the recorded history too.
func (w *WaitPredictor) RecordedHistory() bool {
	return w.Models[1].Meta().Params[WaitHistoryParam] == WaitHistoryRecorded
}
