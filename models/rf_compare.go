//go:build xgboost

package models

import (
	"fmt"
	"time"
)

// CompareRF fits both random forests on the same training set (Y 0/1) and
// scores them on the same test set as classifiers (KindRF was chosen on LS6
// as a submission policy; see its doc comment).
func CompareRF(train, test *Dataset, xp XGBParams, gp GolearnRFParams, meta Meta) ([]RFResult, error) {
	var res []RFResult
	score := func(k Kind, m Model, fit float64) error {
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
		res = append(res, RFResult{Kind: k, Accuracy: Accuracy(p, test.Y), AUC: AUC(p, test.Y), LogLoss: binaryLogLoss(p, test.Y), FitSeconds: fit, PredictUS: us, Model: m})
		return nil
	}
	mx := meta
	mx.Kind = KindRFXGB
	x, err := TrainXGB(train, xp, mx)
	if err != nil {
		return nil, fmt.Errorf("compare rf: %w", err)
	}
	if err := score(KindRFXGB, x, x.Meta().TrainSeconds); err != nil {
		return nil, err
	}
	g, err := TrainRFGolearn(train, gp, meta)
	if err != nil {
		return nil, fmt.Errorf("compare rf: %w", err)
	}
	if err := score(KindRFGolearn, g, g.Meta().TrainSeconds); err != nil {
		return nil, err
	}
	return res, nil
}
