// Package xgb is the XGBoost learner: gradient-boosted trees (kind xgb) and
// XGBoost's random-forest mode (kind rf-xgb).
//
// Serving is pure Go: XGBModel converts the libxgboost 1.7 binary model for
// github.com/dmitryikh/leaves (ConvertXGB17ForLeaves) and needs no C
// library. Training (TrainXGB, Booster) calls libxgboost through cgo and is
// built only with the `xgboost` build tag; without it TrainXGB returns
// ErrNoXGBoost (stub.go) while loading and serving still work.
//
// Contract: the package registers KindXGB and KindRFXGB with
// models.RegisterLoader in init; model.xgb is kept exactly as libxgboost
// saved it.
package xgb
