//go:build xgboost

package slurm

// scaleTags are the build tags of the mirage BenchmarkDaemonScale builds:
// this test binary's own, so that the build reuses its cached packages.
const scaleTags = "libsqlite3 xgboost"
