package provisioner

import (
	"time"

	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// JobState is a job's lifecycle state, named as Slurm names it.
type JobState string

// Job states as reported by squeue/sacct (and mapped to by the simulator and Kubernetes).
const (
	StatePending   JobState = "PENDING"
	StateRunning   JobState = "RUNNING"
	StateCompleted JobState = "COMPLETED"
	StateFailed    JobState = "FAILED"
	StateTimeout   JobState = "TIMEOUT"
	StateCancelled JobState = "CANCELLED"
	StatePreempted JobState = "PREEMPTED"
	StateNodeFail  JobState = "NODE_FAIL"
	StateOOM       JobState = "OUT_OF_MEMORY"
	StateUnknown   JobState = "UNKNOWN"
)

// Finished reports whether the state is terminal.
func (s JobState) Finished() bool {
	switch s {
	case StatePending, StateRunning, StateUnknown, StateSubmitting, "":
		return false
	}
	return true
}

// Pending reasons (Job.Reason) that mirage reads, as squeue prints them.
const (
	PendingPriority   = "Priority"   // jobs ahead of it in the queue
	PendingResources  = "Resources"  // waiting for nodes to free
	PendingDependency = "Dependency" // held until a dependency is met
	PendingBeginTime  = "BeginTime"  // held until its begin time
	// PendingNone: submitted, not yet looked at by the scheduler (squeue's
	// reason for a job slurmctld has not tried to start): on its next pass
	// it takes what it fits.
	PendingNone = "None"
)

// Job is one batch job (or Kubernetes workload) as a backend reports it.
// Zero times mean "not known / not yet".
type Job struct {
	ID        string        // backend job id ("1234", "1234_7" for array tasks)
	Name      string        // job name
	User      string        // submitting user
	Account   string        // Slurm account; mirage's "team"
	Partition string        // partition (queue)
	QOS       string        // quality of service
	State     JobState      // current state
	Reason    string        // pending reason (Priority, Resources, Dependency, ...)
	Submit    time.Time     // submission time
	Eligible  time.Time     // when it became eligible to start, if known
	Start     time.Time     // actual start (running/finished), zero when pending
	End       time.Time     // actual end (finished) or zero
	EstStart  time.Time     // scheduler's start estimate (squeue --start), zero if none
	TimeLimit time.Duration // wall-clock limit
	Nodes     int           // nodes requested or allocated
	GPUs      int           // GPUs requested or allocated, in total
	GPUType   string        // GPU type constraint, if any
	Priority  int64         // scheduler priority
	Comment   string        // free text; mirage puts its chain tag here
	NodeList  []string      // allocated nodes when running
	ExitCode  int           // exit code when finished
	Signal    int           // terminating signal when finished
	Depend    string        // dependency expression, e.g. "afterany:123"
	// Checkpoint is when the job last completed a checkpoint, when the
	// backend knows it (Kubernetes: the workload's annotation
	// mirage.io/last-checkpoint); zero: unknown. A reclaim prefers victims
	// that lose the least work since then.
	Checkpoint time.Time
}

// Waited is how long the job has waited (until start, or until now when pending).
func (j *Job) Waited(now time.Time) time.Duration {
	if j.Submit.IsZero() {
		return 0
	}
	if !j.Start.IsZero() {
		return j.Start.Sub(j.Submit)
	}
	return now.Sub(j.Submit)
}

// Elapsed is how long the job has run (until end, or until now when running).
func (j *Job) Elapsed(now time.Time) time.Duration {
	if j.Start.IsZero() {
		return 0
	}
	if !j.End.IsZero() {
		return j.End.Sub(j.Start)
	}
	return now.Sub(j.Start)
}

// NodeState is a node's availability.
type NodeState string

// Node availability states.
const (
	NodeUp       NodeState = "up"       // schedulable
	NodeDrained  NodeState = "drained"  // cordoned/drained: runs nothing new
	NodeDown     NodeState = "down"     // not ready / down
	NodeReserved NodeState = "reserved" // held by a reservation
)

// Node is one compute node and its GPU inventory.
type Node struct {
	Name       string            // node name
	State      NodeState         // availability
	CPUs       int               // total CPUs
	CPUsUsed   int               // allocated CPUs
	GPUs       int               // total GPUs (whole devices)
	GPUsUsed   int               // allocated GPUs
	GPUType    string            // GPU product, if known
	Partitions []string          // partitions (Slurm) the node belongs to
	Labels     map[string]string // extra labels (Kubernetes), nil on Slurm
}

// FreeGPUs is the number of unallocated GPUs on a schedulable node.
func (n *Node) FreeGPUs() int {
	if n.State != NodeUp {
		return 0
	}
	return n.GPUs - n.GPUsUsed
}

// Capabilities are what a backend does by itself, beyond the Cluster
// port. Every Snapshot carries its backend's, so that Step and the team
// rules read them from what they decide on, instead of callers passing
// flags around or asking the Cluster what it implements.
type Capabilities struct {
	// Queues: the backend holds a job that cannot start yet — for want of
	// room, or because it depends on a job still running — and starts it
	// later by itself (Slurm, the simulator). Without it (Kubernetes)
	// mirage creates work only where and when it can run: the team rules
	// choose its node and defer what fits nowhere, and a submission that
	// depends on a job still live waits in mirage until that job is gone.
	Queues bool
	// Unpins: the backend lifts the node list of a pending job (OpUnpin,
	// executed through Unpinner: scontrol update ReqNodeList= on Slurm), so
	// a successor pinned to its predecessor's nodes may start elsewhere.
	Unpins bool
}

// Snapshot is a read-only view of a cluster at one instant: what squeue/sinfo
// report on Slurm, what the simulator holds, what the API server lists.
type Snapshot struct {
	Time  time.Time    // when it was taken (backend clock)
	Nodes []Node       // all nodes
	Jobs  []Job        // pending and running jobs (and recently finished ones where known)
	Caps  Capabilities `json:"-"` // what the backend does by itself (a snapshot file does not say: its reader decides)
	// Reclaimed is borrowed work the backend saw reclaimed recently
	// (Kubernetes: mirage's reclaim events on the evicted pods), for the
	// team rules' back-off; empty where the backend keeps no such record.
	Reclaimed []Reclaimed `json:"-"`
}

// Reclaimed is one job reclaimed from the team that borrowed it.
type Reclaimed struct {
	JobID string    // the job stopped
	Team  string    // the team that had borrowed
	Time  time.Time // when its eviction began
}

// Node finds a node by name, or returns nil.
func (s *Snapshot) Node(name string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Pending returns the pending jobs.
func (s *Snapshot) Pending() []*Job { return s.filter(StatePending) }

// Running returns the running jobs.
func (s *Snapshot) Running() []*Job { return s.filter(StateRunning) }

func (s *Snapshot) filter(st JobState) []*Job {
	var out []*Job
	for i := range s.Jobs {
		if s.Jobs[i].State == st {
			out = append(out, &s.Jobs[i])
		}
	}
	return out
}

// Job finds a job by id, or returns nil.
func (s *Snapshot) Job(id string) *Job {
	for i := range s.Jobs {
		if s.Jobs[i].ID == id {
			return &s.Jobs[i]
		}
	}
	return nil
}

// SubmitRequest describes one job to submit. Backends translate it: sbatch
// options on Slurm, a Job object on Kubernetes, an arrival in the simulator.
type SubmitRequest struct {
	Name       string              // job name
	Script     string              // batch script path (Slurm); ignored by the simulator
	Args       []string            // extra backend options passed through verbatim, as a list (never a shell string)
	Account    string              // account / team
	Partition  string              // partition
	QOS        string              // QOS (a preemptible QOS for borrowed work)
	TimeLimit  time.Duration       // wall-clock limit (0 = backend default)
	Nodes      int                 // nodes (0 = backend default)
	GPUs       int                 // GPUs in total (0 = none)
	GPUType    string              // GPU type constraint
	Comment    string              // tag that lets mirage rebuild chains from the backend alone
	Dependency slurmfmt.Dependency // the jobs it waits for (sbatch --dependency), e.g. slurmfmt.AfterAny("123")
	NodeList   []string            // placement hint: only these nodes
	Exclude    []string            // placement hint: not these nodes
	Env        map[string]string   // extra environment for the job
	WorkDir    string              // working directory
	// Begin is the earliest time the job may start (sbatch --begin; zero =
	// at once). Backends that cannot defer a start (Kubernetes) ignore it.
	Begin time.Time
}

// GPUsPerNode is the request's GPUs on each of its nodes (its total spread
// over its nodes, rounded up; 0 when it asks for none).
func (r *SubmitRequest) GPUsPerNode() int {
	if r.GPUs <= 0 {
		return 0
	}
	n := max(r.Nodes, 1)
	return (r.GPUs + n - 1) / n
}
