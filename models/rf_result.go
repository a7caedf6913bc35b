package models

import (
	"fmt"
	"io"
)

// RFResult is one forest's score in CompareRF.
type RFResult struct {
	Kind       Kind    // KindRFXGB or KindRFGolearn
	Accuracy   float64 // at probability 0.5
	AUC        float64 // area under the ROC curve
	LogLoss    float64 // mean binary cross-entropy
	FitSeconds float64 // wall time of the fit
	PredictUS  float64 // mean µs per single-row Predict over the test set
	Model      Model   // the fitted model
}

// WriteRFTable writes CompareRF's results as a Markdown table.
func WriteRFTable(w io.Writer, res []RFResult) {
	fmt.Fprintln(w, "| model | accuracy | AUC | log loss | fit (s) | predict (µs/row) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range res {
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.2f | %.1f |\n", r.Kind, r.Accuracy, r.AUC, r.LogLoss, r.FitSeconds, r.PredictUS)
	}
}
