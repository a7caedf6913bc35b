// Package features turns what a policy sees into numbers.
//
// Observe builds the provisioner.Observation of one chain from any
// backend's Cluster and HistorySource; Features and WaitFeatures turn an
// observation into the vector of the chain schema (mirage-chain) or the
// wait schema (mirage-wait), both defined once by computeFeatures, whose
// field order is the vector order. The backfill planner (plan.go) estimates
// a job's wait from the snapshot alone and feeds the plan fields.
//
// Contract: feature computation is pure (the same observation gives the
// same vector, bit for bit, on every backend), and a schema's version is
// bumped on any change of a field's meaning, order or count; CheckSchema
// refuses a model trained on another schema. This package imports no
// learner, no dataset and no training code.
package features
