package sim

import (
	"time"

	"github.com/mirage-gpu/mirage/traces"
)

// FromTraces converts recorded jobs to replay specs: recorded submit (or
// eligible, when given for that job), runtime = end − start (the simulator
// caps it at the limit: TIMEOUT), nodes, GPUs, user and account. Jobs that
// never started or ended are skipped and counted: their runtime is unknown.
// A recorded eligible time (sacct traces) later than the submission is
// when the job is submitted in the replay; eligible may be nil; a later
// non-zero eligible[i] replaces either. The recorded priority is scaled by
// the trace's largest (JobSpec.RecordedPriority).
func FromTraces(jobs []traces.Job, eligible []time.Time) (specs []JobSpec, index []int, skipped int) {
	var top int64 // the recorded priorities are scaled by the largest
	for i := range jobs {
		top = max(top, jobs[i].Priority)
	}
	specs = make([]JobSpec, 0, len(jobs))
	index = make([]int, 0, len(jobs))
	seen := make(map[string]bool, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		if j.Submit.IsZero() || j.Start.IsZero() || j.End.IsZero() {
			skipped++
			continue
		}
		sub := j.Submit
		if !j.Eligible.IsZero() && j.Eligible.After(sub) && !j.Eligible.After(j.Start) {
			sub = j.Eligible // recorded (sacct): it could not start before
		}
		if eligible != nil && !eligible[i].IsZero() && eligible[i].After(sub) {
			sub = eligible[i]
		}
		id := j.ID
		for seen[id] {
			id += "+"
		}
		seen[id] = true
		specs = append(specs, JobSpec{
			ID: id, Name: j.Name, User: j.User, Account: j.Account, Submit: sub,
			TimeLimit: j.TimeLimit, Runtime: j.Runtime(), Nodes: max(j.Nodes, 1), GPUs: j.GPUs, Fail: j.ExitCode != 0,
		})
		if top > 0 && j.Priority > 0 {
			specs[len(specs)-1].RecordedPriority = float64(j.Priority) / float64(top)
		}
		index = append(index, i)
	}
	return specs, index, skipped
}
