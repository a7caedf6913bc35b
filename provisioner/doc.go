// Package provisioner is mirage's domain core: the types every backend speaks
// (cluster snapshots, jobs, nodes, chains and segments, actions), the ports
// that backends, stores, policies and team rules implement (all in
// ports.go: Cluster, HistorySource, Clock, Rules, Policy, Store, ...) and the
// pure decision logic that reconciles chains and decides when to pre-submit
// each successor (Step), with the Engine that applies it and the baseline
// policies.
//
// Contract: nothing in this package performs I/O, reads the wall clock or
// imports an adapter (sim, slurm, k8s) or a model. The decision step takes a
// snapshot, the stored state and "now" and returns actions; a thin apply layer
// in the caller performs them. The same code therefore decides in the
// simulator, on Slurm and on Kubernetes.
//
// Team rules and placement live in the subpackages team (quota, borrowing,
// reclaim; it implements Rules) and placement (where a job goes, and GPU
// fragmentation); the packing replay behind mirage pack-eval is pack.Run.
// This package imports neither: the engine consults team rules only
// through the Rules port.
//
// Beside the Engine, which applies the decision step through the ports, the
// chain operations of the command line act through the same ports, so the
// CLI only binds flags, wires and prints: RegisterChain and SubmitFirst
// (mirage submit), Daemon (the cycle loop), CancelChain, RecoverChains,
// Handoff, and the read-only views ChainStatus and ChainLog with the one gap
// rule (Gap, Gaps) that reconcile records. DecodeSnapshot reads snapshot files.
package provisioner
