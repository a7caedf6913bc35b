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
// seeds, and imports no other eval package but eval/metrics. The protocols
// an experiment's cell plays share one interface, Protocol (Pair; Chains,
// for chain-K and whole runs): Play takes a Cell (scenario, window,
// policies, factory) and returns what it measured (Played: samples, whole
// runs, unmeasured counts, its own parameters for the provenance), so
// eval.RunCell plays any of them the same way. The walk-forward is not a
// cell protocol: it fits policies period by period on chain tables and
// replays the others through Pair (ReplayBaselines); it returns outcomes
// pooled into rows (WFResult).
package protocol
