//go:build xgboost

package models

import (
	"fmt"
	"time"
)

// TrainXGB trains an XGBoost model through libxgboost on ds and returns it
// wrapped for pure-Go serving. meta supplies kind (KindXGB or KindRFXGB),
// schema, trace, windows and seed; params, libraries, rows and fit time are
// filled in here. p.Seed defaults to meta.Seed when zero.
func TrainXGB(ds *Dataset, p XGBParams, meta Meta) (*XGBModel, error) {
	if err := ds.Validate(); err != nil {
		return nil, err
	}
	if p.Seed == 0 {
		p.Seed = meta.Seed
	}
	start := time.Now() // wall time of the fit, recorded in meta.json only
	b, err := TrainBooster(ds.X, ds.Y, p)
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
	libs := LibraryVersions()
	libs["libxgboost"] = LibXGBoostVersion()
	meta.Libraries = libs
	return NewXGBModel(raw, meta)
}
