// Package slurm is mirage's Slurm backend. It talks to a real Slurm only
// through its commands (squeue, sinfo, sacct, sbatch, scancel, scontrol) and
// returns the project's own types: Client implements provisioner.Cluster
// (Snapshot, Submit, Cancel, Signal) and provisioner.HistorySource (History),
// plus Jobs, Job, Nodes, Partitions, StartEstimates, ScontrolJob and
// Accounting. Its snapshots carry Slurm's Capabilities (it queues; it lifts
// node lists); the team rules are the engine's, which applies them before
// each submission, and Slurm carries out what they decide through the
// request (QOS, node hints) and its own QOS preemption.
//
// Contract:
//
//   - Commands run through a Runner: exec.CommandContext with an argument
//     list, never a shell, so job names, comments, paths and scripts are passed
//     verbatim and nothing in them is executed. SLURM_CONF, PATH and TZ come
//     from Config; variables that change the query commands' output
//     (SQUEUE_FORMAT, SACCT_FORMAT, SLURM_TIME_FORMAT, ...) are removed.
//   - ExecRunner.DieWithParent (set by mirage's chain commands) has the
//     kernel kill each command when mirage dies (Linux parent-death
//     signal), so a crashed daemon leaves no sbatch that could still create
//     a job later.
//   - Every call has a timeout (Config.Timeout, per command in
//     Config.Timeouts). Transient failures (controller or slurmdbd
//     unreachable, socket timeouts, timeouts of queries) are retried a bounded
//     number of times with doubling waits (Config.Retry); rejections,
//     permission errors, MUNGE failures and missing commands never are.
//   - sbatch is retried only when it could not connect to the controller, so
//     nothing can have been submitted. A timed-out sbatch, or one that lost
//     its answer, may have created the job: it is not resubmitted (that could
//     run a segment twice); the error is returned and the chains layer adopts
//     the job by the tag in its comment (provisioner.Tag).
//   - Output is read as JSON where the command offers it (squeue --json,
//     sinfo -N --json, sacct --json) and as delimited text otherwise
//     (squeue -O, sinfo -O, sacct --parsable2, scontrol show job -o,
//     squeue --start). The JSON of Slurm 22.05 (openapi/v0.0.38) and of the
//     later data parsers (v0.0.39 to v0.0.43, 23.02 to 25.05) is read by field
//     name: plain numbers and {set,infinite,number} objects, states as words
//     or lists of base state and flags. A document without a version, older
//     than 22.05, or missing the list a parser needs is an error wrapping
//     ErrUnsupportedVersion that names the release; the Client then falls
//     back to the text formats and logs it once. Releases newer than 25.11
//     are read by field name with a warning.
//   - Slurm 22.05's squeue --json ignores -u/-t/-j/-p and returns every job
//     slurmctld holds; filtering (JobFilter, Config.Users) happens in Go.
//     From 23.02 on, squeue --json applies squeue's filters, the default
//     state filter included (jobs that ended within MinJobAge vanish), so
//     mirage always runs `squeue --json --all --states=all` (22.05 accepts
//     and ignores both). 22.05's squeue --json also exits 0 with an "errors" list and no jobs when slurmctld is
//     unreachable: that is a *JSONError, classified as ErrControllerDown,
//     never an empty queue.
//   - Slurm 22.05's sacct --json reports every job's exit code as 0 (seen on
//     the test cluster; testdata/sacct-22.05.*), so History reads
//     --parsable2 on 22.05 and --json on later releases (Config.SacctFormat).
//     sacct always gets explicit -S/-E: without them it silently shows only
//     jobs since midnight.
//   - Parsers (ParseSqueueJSON, ParseSacctJSON, ParseSinfoJSON,
//     ParseSqueueText, ParseSacctParsable, ParseNodesText,
//     ParsePartitionsText, ParseScontrolJob, ParseStartText, ParseSbatch,
//     ParseVersionText, ParseSbatchArgs, ParseBatchScript) are pure
//     functions from bytes to types. Durations, hostlists, GRES and TRES
//     are read by the leaf package slurm/slurmfmt, shared with traces, sim
//     and cmd/mirage. Text times are read in the Client's zone (Config.TZ,
//     default UTC), which is also exported to the commands.
//   - Errors carry a sentinel a caller can act on: ErrNotInstalled,
//     ErrControllerDown, ErrMungeDown, ErrTimeout (all wrap
//     provisioner.ErrUnavailable), provisioner.ErrNoAccounting (sacct fails
//     while squeue works: callers carry on without history), ErrPermission,
//     provisioner.ErrNotFound, ErrJobFinished, and *RejectedError (wraps
//     provisioner.ErrRejected) with Slurm's reason. ErrBadRequest (also
//     provisioner.ErrRejected) refuses requests that cannot be passed safely
//     before anything runs.
//   - Time comes from Config.Clock; nothing here calls time.Now in logic.
package slurm
