// Package train fits mirage's models and runs the whole training pipeline.
//
// TrainPolicy fits one learned policy (rf, rf-golearn, rf-xgb, xgb, dqn,
// pg) on chain episodes and tunes its decision rule on the latest share of
// them; TrainWaitPredictor fits the three wait quantiles. TableEnv and
// SimEnv are the chain-submission environments the RL learners play. Run is
// the pipeline behind `mirage train`: from a trace and a Spec it builds the
// scenario, the windows and the (cached, possibly arrival-scaled) datasets,
// trains every requested model and saves it.
//
// Contract: train may import every models package (features, scenario,
// dataset, the learners and models itself) and no eval package (the
// walk-forward, which refits policies per period, is eval/protocol's and
// imports train); it reads no flags or environment. Errors a caller should map to
// a usage error wrap ErrSpec.
package train
