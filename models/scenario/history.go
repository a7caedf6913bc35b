package scenario

import (
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/traces"
)

// RecordedHistory answers what sacct showed at an instant of a recorded
// trace: the jobs that had started by then, with the times the trace
// recorded, as the simulator's History answers it for its replay. A wait
// predictor that learns the recorded waits sees the recorded history too,
// as it will on a live cluster, where its history comes from sacct.
type RecordedHistory struct {
	jobs     []traces.Job // started jobs, by start
	maxLimit time.Duration
}

// NewRecordedHistory indexes the jobs that started.
func NewRecordedHistory(jobs []traces.Job) *RecordedHistory {
	h := &RecordedHistory{}
	for i := range jobs {
		j := &jobs[i]
		if j.Start.IsZero() || j.Submit.IsZero() {
			continue
		}
		h.jobs = append(h.jobs, *j)
		h.maxLimit = max(h.maxLimit, j.TimeLimit, j.Runtime())
	}
	slices.SortStableFunc(h.jobs, func(a, b traces.Job) int { return a.Start.Compare(b.Start) })
	return h
}

// At returns, as sim.Sim.History does, the jobs active in (since, at]:
// started by at, and started at or after since, ended at or after since,
// or still running at at, in start order. A job that ended after at shows
// as running (no end), as sacct showed it then.
func (h *RecordedHistory) At(at, since time.Time) []provisioner.Job {
	lo, _ := slices.BinarySearchFunc(h.jobs, since.Add(-h.maxLimit), func(j traces.Job, t time.Time) int { return j.Start.Compare(t) })
	var out []provisioner.Job
	for i := lo; i < len(h.jobs) && !h.jobs[i].Start.After(at); i++ {
		j := &h.jobs[i]
		ended := !j.End.IsZero() && !j.End.After(at)
		if j.Start.Before(since) && ended && j.End.Before(since) {
			continue
		}
		pj := provisioner.Job{ID: j.ID, Name: j.Name, User: j.User, Account: j.Account, Partition: j.Partition, Submit: j.Submit,
			Start: j.Start, TimeLimit: j.TimeLimit, Nodes: max(j.Nodes, 1), GPUs: j.GPUs, Priority: j.Priority, State: provisioner.StateRunning}
		if pj.Account == "" {
			pj.Account = j.User
		}
		if ended {
			pj.End, pj.State, pj.ExitCode = j.End, recordedState(j), j.ExitCode
		}
		out = append(out, pj)
	}
	return out
}

// recordedState maps an ended recorded job's state to the provisioner's.
func recordedState(j *traces.Job) provisioner.JobState {
	switch j.State {
	case traces.StateFailed:
		return provisioner.StateFailed
	case traces.StateTimeout:
		return provisioner.StateTimeout
	case traces.StateCancelled:
		return provisioner.StateCancelled
	}
	return provisioner.StateCompleted
}
