// Package sim is a discrete-event Slurm simulator. It replays historical jobs
// (traces.Job) with their recorded submit times and runtimes on a model of a
// cluster (nodes with CPUs and GPUs, partitions), deciding start times with
// Slurm's semantics: priority/basic (first submitted, first served: 22.05's
// default) or priority/multifactor (age accrued from eligibility up to
// PriorityMaxAge, with MaxJobsAccrue per user and PriorityFlags=
// ACCRUE_ALWAYS; job size, fair-share with a decay half-life, partition,
// QOS), a main scheduling pass in priority order that stops at the first
// job of each partition that cannot start (a job whose node list names its
// nodes only keeps later jobs off those; a job younger than
// bf_min_age_reserve keeps nobody off anything), EASY/Slurm-style backfill
// (bf_window, bf_resolution, bf_max_job_test, bf_max_job_user,
// bf_min_age_reserve, bf_interval) planned from time limits only, TIMEOUT
// at the limit, dependencies (afterok, afterany, singleton) and QOS
// preemption (requeue or cancel). Each Config field names its slurm.conf
// setting and Slurm's default.
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
//     PriorityDecayHalfLife, S equal shares per account then per user
//     (22.05's default is Fair Tree, which ranks associations instead).
//   - Backfill plans on a per-partition step function of idle nodes and
//     free GPUs. It is exact for homogeneous whole-node partitions; for
//     GPU-granular partitions a planned start of "now" is checked against
//     real placement, and a job that does not fit (fragmentation) is
//     planned from the next step. A job with a node list (--nodelist) is
//     planned on those nodes, as sched/backfill plans a job's required
//     nodes: from when they are all free (the planned ends of the jobs on
//     them; on shared nodes, the latest, which may be late) and not
//     reserved for a higher-priority job's node list; its reservation
//     holds those whole nodes, and no job the pass starts later lands on
//     them if it would still run then. Other jobs' reservations are node
//     counts (which nodes sched/backfill would pick is not modelled).
//   - Under MaxJobsAccrue, a place freed by a job leaving the queue goes to
//     its user's next job at once (slurmctld at its next scheduling pass).
//   - In a run to the end that no callback can observe (Run with a zero
//     time, no OnTick or OnStart), a backfill pass that can start no job
//     on what is free now is skipped: it would
//     only plan starts, and the run ends with no job pending, so nobody
//     can read them. Starts and ends are those of a run that plans.
//   - Preemption (PreemptType=preempt/qos): a job of a non-preemptible QOS
//     that cannot start in the main pass preempts running jobs of
//     preemptible QOS, latest-started first, only if that frees enough;
//     requeued jobs run again from scratch with their original submit time.
//     Jobs that can preempt queue ahead of preemptible ones, whatever
//     their priorities, as slurmctld sorts its queue.
//   - A limit above the partition MaxTime is capped to it (Slurm would
//     leave the job pending forever without EnforcePartLimits).
//   - Nodes never fail. Signal ends a running job Config.Checkpoint after
//     it (a segment checkpointing for mirage handoff); without one it has
//     no effect.
package sim
