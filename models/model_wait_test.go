package models

import (
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestWaitPredictorSortsAndClamps(t *testing.T) {
	w, err := NewWaitPredictor(&testFixedModel{task: Regression, value: 600}, &testFixedModel{task: Regression, value: -5}, &testFixedModel{task: Regression, value: 7200})
	if err != nil {
		t.Fatal(err)
	}
	obs := WaitObservation(testT0, testObservation().Snapshot, nil, provisioner.SubmitRequest{Nodes: 1, GPUs: 4, TimeLimit: 48 * time.Hour})
	got, err := w.Predict(obs)
	if err != nil {
		t.Fatal(err)
	}
	// −5 s clamps to 0 and sorts first; 600 s and 7200 s follow.
	want := WaitEstimate{P10: 0, P50: 10 * time.Minute, P90: 2 * time.Hour}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := NewWaitPredictor(&testFixedModel{task: Classification}, &testFixedModel{task: Regression}, &testFixedModel{task: Regression}); err == nil || !strings.Contains(err.Error(), "p10") {
		t.Errorf("classification model accepted: %v", err)
	}
}
