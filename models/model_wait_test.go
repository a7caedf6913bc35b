package models

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
	"github.com/mirage-gpu/mirage/provisioner"
)

func TestWaitPredictorSortsAndClamps(t *testing.T) {
	p50 := &testFixedModel{task: Regression, value: -5, wait: true}
	w, err := NewWaitPredictor(&testFixedModel{task: Regression, value: 600, wait: true}, p50, &testFixedModel{task: Regression, value: 7200, wait: true})
	if err != nil {
		t.Fatal(err)
	}
	obs := features.WaitObservation(testobs.T0, testobs.Observation().Snapshot, nil, provisioner.SubmitRequest{Nodes: 1, GPUs: 4, TimeLimit: 48 * time.Hour})
	got, err := w.Predict(obs)
	if err != nil {
		t.Fatal(err)
	}
	// −5 s clamps to 0 and sorts first; 600 s and 7200 s follow.
	want := WaitEstimate{P10: 0, P50: 10 * time.Minute, P90: 2 * time.Hour}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if p50.width != 79 {
		t.Errorf("the models saw %d features, want the wait schema's 79", p50.width)
	}
	if _, err := NewWaitPredictor(&testFixedModel{task: Classification, wait: true}, &testFixedModel{task: Regression, wait: true}, &testFixedModel{task: Regression, wait: true}); err == nil || !strings.Contains(err.Error(), "p10") {
		t.Errorf("classification model accepted: %v", err)
	}
	// A model of the chain schema is refused, naming both schemas.
	_, err = NewWaitPredictor(&testFixedModel{task: Regression, wait: true}, &testFixedModel{task: Regression}, &testFixedModel{task: Regression, wait: true})
	if !errors.Is(err, features.ErrSchemaMismatch) || !strings.Contains(err.Error(), "p50") || !strings.Contains(err.Error(), "mirage-chain") || !strings.Contains(err.Error(), "mirage-wait") {
		t.Errorf("chain-schema model: %v", err)
	}
}
