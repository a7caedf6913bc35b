// Package realslurm is the experiment of issue 46: chains driven by the
// real mirage on a real slurmctld under a time-scaled replay of a trace
// slice, and the simulator replaying the same jobs, compared.
//
// The experiment has two sides. The real side (bench_test.go, run by
// `make bench-real-slurm`) brings up the loopback cluster of
// scripts/slurm-up.sh with MIRAGE_SLURM_NODES nodes and the scheduling
// lines SchedulingConf writes from a simulator preset, submits the
// background load Plan builds from a trace slice as the second Unix user
// at its scaled submit times, registers chains with `mirage submit` and
// runs `mirage daemon --once` every scaled cycle, and reads back what
// sacct recorded (a Record). The simulated side (Simulate) reads the
// run's own slurm.conf and Record and replays exactly those background
// jobs and chain registrations in the simulator, the same policies
// deciding through the same provisioner.Engine. Compare pairs the two per
// hand-off and per background job, and WritePage writes
// docs/results/real-slurm.md with issue 46's acceptance lines.
//
// Contract:
//   - Times on the real cluster are real seconds; a trace's times are
//     divided by Scale.Factor (S). Figures in trace time are real ones
//     multiplied by S.
//   - Plan and Simulate are pure (no I/O, no wall clock, no randomness);
//     the same inputs give the same outputs.
//   - Nothing of a trace is written into the repository: the page holds
//     aggregate figures only.
package realslurm
