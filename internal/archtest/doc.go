// Package archtest holds no code: its test checks that the module's imports
// point inward, as the design draws them. The domain (provisioner and
// its subpackages) depends on no adapter (sim, slurm, k8s), no model, no
// evaluation, no command and no state store; the format parsers
// (slurm/slurmfmt) depend on the standard library only; traces depends on
// nothing of ours but slurm/slurmfmt; the models' serving side (models,
// models/features) depends on no learner, dataset or training code; eval
// depends on no training code and no dataset builder, its subpackages do
// not import its root, and eval/metrics imports no other eval package.
//
// The rules are checked on the transitive dependencies `go list -deps`
// reports, for each build variant (no tags, and "libsqlite3 xgboost"). A
// rule about a package that does not exist (yet) is skipped.
//
// TestCoreDoesNoIO checks, file by file, that the provisioner's root
// package does no I/O (no os, os/exec, net, log, log/slog, syscall or
// crypto/rand) outside the Engine's file: its decision step is pure.
package archtest
