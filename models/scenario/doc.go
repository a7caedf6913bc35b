// Package scenario is the chain-experiment harness shared by dataset
// generation, training and evaluation: a recorded trace prepared for replay
// (Scenario, optionally with scaled arrivals), the published pair protocol
// (Protocol: when chains are injected, how often a policy decides, when the
// reactive submission is forced), one injected chain in its own simulator
// (ChainRun, with probes of the successor's Outcome in forks), and the cost
// of a hand-over's gap (GapCost, GapSummary).
//
// Contract: every experiment builds its own simulator from an immutable
// Scenario, so results depend only on the scenario, the protocol and the
// seeds; observations are built by provisioner.Observe, as the daemon's
// step builds them (Observe reads the simulator, then calls it). This package imports no model, learner or training code.
package scenario
