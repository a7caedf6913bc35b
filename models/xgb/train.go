//go:build xgboost

package xgb

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
)

// TrainXGB trains an XGBoost model through libxgboost on ds and returns it
// wrapped for pure-Go serving. meta supplies kind (KindXGB or KindRFXGB),
// schema, trace, windows and seed; params, libraries, rows and fit time are
// filled in here. p.Seed defaults to meta.Seed when zero.
func TrainXGB(ds *models.Dataset, p XGBParams, meta models.Meta) (*XGBModel, error) {
	if err := ds.Validate(); err != nil {
		return nil, err
	}
	if p.Seed == 0 {
		p.Seed = meta.Seed
	}
	start := time.Now() // wall time of the fit, recorded in meta.json only
	y := ds.Y
	meta.Output = nil
	if p.Quantile > 0 {
		if p.Quantile >= 1 {
			return nil, fmt.Errorf("train %s: quantile %v outside (0,1)", meta.Kind, p.Quantile)
		}
		// Standardise the target around its unconditional quantile so the
		// bounded pinball gradients (|g| ≤ 1) move predictions at a useful rate.
		sorted := append([]float64(nil), ds.Y...)
		sort.Float64s(sorted)
		shift := features.Percentile(sorted, p.Quantile)
		scale := math.Sqrt(variance(ds.Y))
		if scale < 1e-12 {
			scale = 1
		}
		y = make([]float64, len(ds.Y))
		for i, v := range ds.Y {
			y[i] = (v - shift) / scale
		}
		meta.Output = &models.OutputTransform{Shift: shift, Scale: scale}
	}
	b, err := TrainBooster(ds.X, y, p)
	if err != nil {
		return nil, fmt.Errorf("train %s: %w", meta.Kind, err)
	}
	defer b.Close()
	raw, err := b.SaveRaw()
	if err != nil {
		return nil, fmt.Errorf("train %s: %w", meta.Kind, err)
	}
	meta.TrainSeconds = time.Since(start).Seconds()
	meta.TrainRows = len(ds.X)
	meta.Params = p.Map()
	meta.Schema = ds.Schema
	libs := models.LibraryVersions()
	libs["libxgboost"] = LibXGBoostVersion()
	meta.Libraries = libs
	return NewXGBModel(raw, meta)
}

// variance is the population variance (0 when empty).
func variance(y []float64) float64 {
	if len(y) == 0 {
		return 0
	}
	m := models.Mean(y)
	s := 0.0
	for _, v := range y {
		s += (v - m) * (v - m)
	}
	return s / float64(len(y))
}
