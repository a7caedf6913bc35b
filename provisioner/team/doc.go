// Package team holds mirage's team rules: who may use how many GPUs
// (quotas), where work goes (packing, through package placement), and how
// idle quota is lent and taken back (borrowing and reclaim).
//
// Contract: Config is the rules file (YAML or JSON, ParseConfig). Rules
// decides one submission at a time (Decide: admit, queue, reclaim, borrow
// or defer, with the reason, the team's Usage, the placement and any
// ReclaimPlan) and implements provisioner.Rules for the engine (Admit), so
// the same rules act in the simulator, on Slurm and on Kubernetes.
// PlanReclaim chooses which borrowed jobs to stop, by criteria listed on it
// and ending in the node name. Explain is the dry run behind "mirage place"
// (on a cluster view from a backend or from a hand-written snapshot,
// ParseSnapshot).
//
// Everything here is pure: decisions rewrite the request (QOS, packing
// hints) but perform nothing; callers (the engine, slurm.TeamCluster,
// k8s.TeamCluster) apply them. The provisioner core does not import this
// package: the engine reaches it only through the provisioner.Rules port.
package team
