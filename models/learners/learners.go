// Package learners registers every learner's model kinds with models: a
// program that loads trained models (the CLI, an evaluation) imports it
// once, blank, so that models.Load can read xgb, rf-xgb, rf-golearn, mlp,
// dqn and pg directories.
package learners

import (
	_ "github.com/mirage-gpu/mirage/models/forest"
	_ "github.com/mirage-gpu/mirage/models/nn"
	_ "github.com/mirage-gpu/mirage/models/xgb"
)
