// Package placement decides where one job goes on a cluster of GPU nodes,
// and measures how fragmented the cluster's free GPUs are.
//
// Contract: State is the cluster as the placement sees it (free thousandths
// of every GPU, free CPU, GPU type and schedulability per node; built from a
// provisioner.Snapshot by FromSnapshot or from nodes by NewState). Place runs
// the pipeline filter → score → normalise → pick for one Demand under one
// Policy (first-fit, best-fit, spread, or frag-aware: the fragmentation
// gradient of "Beware of Fragmentation", ATC'23); every rejected node is
// counted under a constant Reason, every comparator lists its criteria and
// ends in the node name, so equal inputs give equal placements. Place never
// changes the state: the caller Assigns (or Releases) the result. The
// job-size Mix that frag-aware and Fragmentation measure against is learned
// from jobs (LearnMix, MixFromJobs) over a power-of-two default. FGD, the
// paper's own gradient without mirage's extensions, is an evaluation
// baseline that Place takes but ParsePolicy does not offer.
//
// Files follow the pipeline: demand.go (what a job asks), state.go (the
// cluster), filter.go (which nodes may take it, and why not), score.go (how
// a node's GPUs are chosen and candidates compared), place.go (Place: the
// pipeline and its explanations), frag.go (the job-size mix and the
// fragmentation measure), memo.go (figures kept between placements).
//
// The package is pure: no I/O, no clock, no randomness. It imports only the
// provisioner's types; quotas, borrowing and reclaim live in package team.
package placement
