// Package slurm is mirage's Slurm backend: it talks to a real Slurm only
// through its commands (squeue, sacct, sbatch, scancel, scontrol, sinfo) and
// returns the project's own types (provisioner.Job, provisioner.Node,
// provisioner.Snapshot).
//
// Contract:
//   - Commands run through a Runner (exec.CommandContext with an argument
//     list, never a shell), each with its own timeout; SLURM_CONF and PATH
//     come from Config.
//   - Transient failures ("Socket timed out", "Unable to contact slurm
//     controller", slurmdbd connection refused) are retried a bounded number
//     of times with exponential backoff; rejections never are. sbatch is only
//     retried when nothing can have been submitted (connection failures).
//   - Parsers (ParseSqueueJSON, ParseSacctJSON, ...) are pure functions from
//     bytes to types. They read the JSON of Slurm 22.05 (openapi v0.0.38) and
//     of later releases (23.x to 25.x: numbers as {set,infinite,number}
//     objects, states as arrays) by field name.
//   - Errors carry a sentinel a caller can act on: ErrNotInstalled,
//     ErrControllerDown, ErrMungeDown (all wrap provisioner.ErrUnavailable),
//     provisioner.ErrNoAccounting (sacct fails while squeue works),
//     ErrPermission, provisioner.ErrNotFound, and *RejectedError (wraps
//     provisioner.ErrRejected) with Slurm's message.
package slurm
