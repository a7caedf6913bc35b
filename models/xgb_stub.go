//go:build !xgboost

package models

// LibXGBoostVersion is empty in builds without libxgboost.
func LibXGBoostVersion() string { return "" }

// TrainXGB needs libxgboost: this build returns ErrNoXGBoost (serving works without it).
func TrainXGB(ds *Dataset, p XGBParams, meta Meta) (*XGBModel, error) { return nil, ErrNoXGBoost }

// CompareRF needs libxgboost: this build returns ErrNoXGBoost.
func CompareRF(train, test *Dataset, xp XGBParams, gp GolearnRFParams, meta Meta) ([]RFResult, error) {
	return nil, ErrNoXGBoost
}
