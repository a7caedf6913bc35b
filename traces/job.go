package traces

import "time"

// State is a job's final (or last known) state, named as Slurm names it
// ("COMPLETED", "TIMEOUT", "FAILED", "CANCELLED", ...). Empty when the source
// does not record it.
type State string

// States that readers produce.
const (
	StateCompleted State = "COMPLETED"
	StateFailed    State = "FAILED"
	StateTimeout   State = "TIMEOUT"
	StateCancelled State = "CANCELLED"
	StatePending   State = "PENDING"
	StateRunning   State = "RUNNING"
	StateUnknown   State = ""
)

// Job is the canonical historical job record every reader produces.
// Zero times and zero counts mean "not recorded by the source".
type Job struct {
	ID        string        // job id as the source writes it
	Name      string        // job name
	User      string        // user (often anonymised)
	Account   string        // account / team / virtual cluster
	Partition string        // partition / queue
	Submit    time.Time     // submission time
	Eligible  time.Time     // when it became eligible (dependencies met), if known
	Start     time.Time     // start time; zero if it never started
	End       time.Time     // end time; zero if it never ended
	TimeLimit time.Duration // requested wall-clock limit; 0 if unknown
	Nodes     int           // nodes
	GPUs      int           // whole GPUs in total
	GPUMilli  int           // for a fractional (shared) GPU: thousandths of one GPU; 0 otherwise
	GPUType   string        // GPU model constraint or allocation, when known
	CPUs      int           // CPUs (or CPU millicores / 1000 rounded up), when known
	State     State         // final state, when known
	ExitCode  int           // exit code
	Signal    int           // terminating signal
	Priority  int64         // scheduler priority, when recorded
}

// Runtime is End − Start, or 0 when either is unknown.
func (j *Job) Runtime() time.Duration {
	if j.Start.IsZero() || j.End.IsZero() {
		return 0
	}
	return j.End.Sub(j.Start)
}

// Wait is Start − Submit, or 0 when either is unknown.
func (j *Job) Wait() time.Duration {
	if j.Start.IsZero() || j.Submit.IsZero() {
		return 0
	}
	return j.Start.Sub(j.Submit)
}

// HitLimit reports whether the job ran for at least its time limit.
func (j *Job) HitLimit() bool {
	return j.TimeLimit > 0 && j.Runtime() >= j.TimeLimit
}
