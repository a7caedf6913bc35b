// Package archtest holds no code: its test checks that the module's imports
// point inward, as the design draws them. The domain (provisioner and
// its subpackages) depends on no adapter (sim, slurm, k8s), no model, no
// evaluation, no command and no state store; the format parsers
// (slurm/slurmfmt) depend on the standard library only; traces depends on
// nothing of ours but slurm/slurmfmt; the models' serving side (models,
// models/features) depends on no learner, dataset or training code; no
// models package imports the evaluation (eval sits above training); eval's
// subpackages do not import its root, eval/metrics imports no other eval
// package, and eval/report and eval/protocol import none but eval/metrics.
//
// The rules are checked on the transitive dependencies `go list -deps`
// reports, for each build variant (no tags, and "libsqlite3 xgboost"). A
// rule about a package that does not exist (yet) is skipped.
//
// TestCoreDoesNoIO checks, file by file, that the provisioner's root
// package does no I/O (no os, os/exec, net, log, log/slog, syscall or
// crypto/rand) outside the Engine's file: its decision step is pure.
package archtest
