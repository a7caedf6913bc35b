// Package protocol runs the evaluation protocols that produce samples: the
// published pair protocol (RunPairs: one predecessor, one successor per
// injection), chain-K (RunChains: K limited segments) and whole
// work-conserving runs (RunWholeRuns), each replaying a scenario in the
// simulator with chains injected over a window and every policy deciding
// through the provisioner's engine; ScaleScenario scales a trace's load.
// RunWalkForward is the walk-forward evaluation: periods scored on the
// chain tables by policies fitted (models/train) only on chains known before
// each period, beside the baselines and the replayed policies played by
// ReplayBaselines, pooled into rows (WalkForwardRows); FitFolds fits one
// policy per period for other protocols to replay.
//
// Contract: a protocol is a function of its scenario, window, policies and
// seeds; it returns metrics.Samples (and, for whole runs, metrics.RunSamples;
// the walk-forward, its outcomes and rows) and imports no other eval package
// but eval/metrics. The protocols share no
// Go interface: their configurations (PairConfig, ChainSetup) and results
// differ (the pair protocol has no unmeasured counts or runs), and the
// experiment that picks one by its name (eval.RunCell) records
// protocol-specific parameters alongside.
package protocol
