// Package metrics holds what an evaluation measures and what a report is
// rebuilt from: the Sample of one hand-off, the RunSample of one whole run,
// the run's Provenance, and the figures computed over samples (Compute,
// ComputeRuns, bootstrap confidence intervals, load classes).
//
// Contract: every function is pure — the same samples and Options give the
// same figures, bootstrap included (seeded per group). It is a leaf of eval:
// it imports no other eval package, so protocols that produce samples and
// reports that render them both depend on it and not on each other.
package metrics
