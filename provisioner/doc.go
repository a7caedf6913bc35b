// Package provisioner is mirage's domain core: the types every backend speaks
// (cluster snapshots, jobs, nodes, chains and segments, actions), the ports
// that backends and stores implement (Cluster, Policy, Store) and the pure
// decision logic that reconciles chains and decides when to pre-submit each
// successor.
//
// Contract: nothing in this package performs I/O, reads the wall clock or
// imports an adapter (sim, slurm, k8s) or a model. The decision step takes a
// snapshot, the stored state and "now" and returns actions; a thin apply layer
// in the caller performs them. The same code therefore decides in the
// simulator, on Slurm and on Kubernetes.
//
// The team rules live here too, pure like the rest: TeamRules (quota per
// team from a YAML/JSON file, admission as admit/queue/reclaim/borrow/defer
// with a reason; it implements Rules), Place (the placement pipeline:
// filter → score → normalise → pick, policies first-fit, best-fit, spread and
// the ATC'23 fragmentation-aware one, GPU sharing and GPU types), PlanReclaim
// (which borrowed jobs to stop, and the steps) and PackEval (the packing
// replay behind mirage pack-eval). Callers perform what they decide.
//
// Beside the Engine, which applies the decision step through the ports, the
// chain operations of the command line act through the same ports, so the
// CLI only binds flags, wires and prints: RegisterChain and SubmitFirst
// (mirage submit), Daemon (the cycle loop), CancelChain, RecoverChains,
// Handoff, and the read-only views ChainStatus and ChainLog with the one gap
// rule (Gap, Gaps) that reconcile records. DecodeSnapshot reads snapshot files.
package provisioner
