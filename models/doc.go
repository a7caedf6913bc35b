// Package models is the serving side of mirage's learned policies: what a
// daemon or an evaluation needs to turn a trained model into decisions.
//
// It defines the Model interface (one number per feature vector) and its
// metadata (Meta, meta.json), saving and loading model directories through a
// registry of loaders that the learner packages fill in their init
// (models/xgb, models/forest, models/nn; import models/learners for all),
// ModelPolicy (a Model as a provisioner.Policy under its DecisionRule),
// WaitPredictor (three wait quantiles), the baselines (average, quantile,
// oracle), the registry of policy names (PolicyFactory) and the metrics
// training reports.
//
// Contract: models imports features for the schemas it checks and never a
// learner, a dataset or the training code; a model trained on another
// feature schema is refused (features.ErrSchemaMismatch) before its file is
// read. The model file formats are those of meta.json and each learner's
// own file, unchanged across this split.
package models
