package models

import (
	"math"
	"testing"
)

func TestMetrics(t *testing.T) {
	// Hand-computed: errors 1, -1, 2 → MAE 4/3, RMSE sqrt(6/3).
	if got := MAE([]float64{1, 1, 5}, []float64{0, 2, 3}); math.Abs(got-4.0/3) > 1e-12 {
		t.Errorf("MAE = %v", got)
	}
	if got := RMSE([]float64{1, 1, 5}, []float64{0, 2, 3}); math.Abs(got-math.Sqrt(2)) > 1e-12 {
		t.Errorf("RMSE = %v", got)
	}
	// Scores 0.1 0.4 0.35 0.8 for labels 0 0 1 1: of 4 pos/neg pairs, 3 ordered right → 0.75.
	if got := AUC([]float64{0.1, 0.4, 0.35, 0.8}, []float64{0, 0, 1, 1}); got != 0.75 {
		t.Errorf("AUC = %v, want 0.75", got)
	}
	if got := AUC([]float64{0.5, 0.5}, []float64{0, 1}); got != 0.5 {
		t.Errorf("AUC ties = %v, want 0.5", got)
	}
	if got := Accuracy([]float64{0.2, 0.6, 0.5}, []float64{0, 0, 1}); math.Abs(got-2.0/3) > 1e-12 {
		t.Errorf("Accuracy = %v", got)
	}
	// Residuals 2 and −1 at q 0.9: 0.9·2 and 0.1·1 → mean 0.95.
	if got := Pinball([]float64{1, 1}, []float64{3, 0}, 0.9); math.Abs(got-0.95) > 1e-12 {
		t.Errorf("Pinball = %v", got)
	}
	if got := SafeLabels([]float64{-3600, -1800, 0, 7200}); got[0] != 0 || got[1] != 1 || got[2] != 1 || got[3] != 1 {
		t.Errorf("SafeLabels = %v", got)
	}
}
