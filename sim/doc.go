// Package sim is a discrete-event Slurm simulator. It replays historical jobs
// (traces.Job) with their recorded submit times and runtimes on a model of a
// cluster (nodes with CPUs and GPUs, partitions), deciding start times with
// Slurm's semantics: multifactor priority (age, job size, fair-share with a
// decay half-life, partition, QOS), a main scheduling pass in priority order
// that stops at the first job of each partition that cannot start (a job
// whose node list names its nodes only keeps later jobs off those), EASY/
// Slurm-style backfill (bf_window, bf_resolution, bf_max_job_test,
// bf_interval) planned from time limits only, TIMEOUT at the limit,
// dependencies (afterok, afterany, singleton) and QOS preemption (requeue or
// cancel).
//
// Contract:
//   - There are no ticks: the clock jumps from event to event (job end,
//     submit, backfill cadence, priority recalculation, decision callback).
//     Time is int64 Unix seconds internally.
//   - A Sim is deterministic: the same inputs give the same per-job starts.
//     It holds no randomness and never reads the wall clock.
//   - Planning (backfill reservations) only ever uses time limits; the
//     runtime of a job is hidden from the scheduler and only decides when
//     its end event fires.
//   - Fork returns an independent deep copy whose future equals the
//     original's future; the copy is cheap (flat slices of value types,
//     immutable job specs shared).
//   - Sim implements provisioner.Cluster on its logical clock, so the same
//     provisioner code runs against it and against real backends.
//   - A Sim is not safe for concurrent use; fork one per goroutine.
//
// Modelling choices (simplifications of slurmctld, each deliberate):
//   - Priorities are recomputed every PriorityCalcPeriod; a main pass runs
//     on every event (submit, end, cancel, dependency release, priority
//     reorder) after a latency drawn from [0, SchedLatency] whole seconds
//     (the only randomness, seeded by Config.Seed); periodic passes that
//     could not change anything are skipped, which is equivalent.
//   - Fair-share is the classic factor 2^(−U/S): U the association's share
//     of all usage (GPU-seconds, or node-seconds without GPUs) decayed with
//     PriorityDecayHalfLife, S equal shares per account then per user.
//   - Backfill plans on a per-partition step function of idle nodes and
//     free GPUs. It is exact for homogeneous whole-node partitions; for
//     GPU-granular partitions a planned start of "now" is checked against
//     real placement, and a job that does not fit (fragmentation) is
//     planned from the next step. A job with a node list (--nodelist) is
//     planned from when those nodes are all free (the planned ends of the
//     jobs on them; on shared nodes, the latest, which may be late).
//   - In a run to the end that no callback can observe (Run with a zero
//     time, no OnTick or OnStart), a backfill pass that can start no job
//     on what is free now is skipped: it would
//     only plan starts, and the run ends with no job pending, so nobody
//     can read them. Starts and ends are those of a run that plans.
//   - Preemption (PreemptType=preempt/qos): a job of a non-preemptible QOS
//     that cannot start in the main pass preempts running jobs of
//     preemptible QOS, latest-started first, only if that frees enough;
//     requeued jobs run again from scratch with their original submit time.
//   - A limit above the partition MaxTime is capped to it (Slurm would
//     leave the job pending forever without EnforcePartLimits).
//   - Nodes never fail. Signal ends a running job Config.Checkpoint after
//     it (a segment checkpointing for mirage handoff); without one it has
//     no effect.
package sim
