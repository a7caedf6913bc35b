//go:build !xgboost

package xgb

import (
	"github.com/mirage-gpu/mirage/models"
)

// CanTrain reports whether this build links libxgboost (TrainXGB works).
const CanTrain = false

// LibXGBoostVersion is empty in builds without libxgboost.
func LibXGBoostVersion() string { return "" }

// TrainXGB needs libxgboost: this build returns ErrNoXGBoost (serving works without it).
func TrainXGB(ds *models.Dataset, p XGBParams, meta models.Meta) (*XGBModel, error) {
	return nil, ErrNoXGBoost
}
