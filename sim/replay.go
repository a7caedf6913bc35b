package sim

import (
	"time"

	"github.com/mirage-gpu/mirage/traces"
)

// FromTraces converts recorded jobs to replay specs: recorded submit (or
// eligible, when given for that job), runtime = end − start (the simulator
// caps it at the limit: TIMEOUT), nodes, GPUs, user and account. Jobs that
// never started or ended are skipped and counted: their runtime is unknown.
// eligible may be nil; a non-zero eligible[i] replaces job i's submit time.
func FromTraces(jobs []traces.Job, eligible []time.Time) (specs []JobSpec, index []int, skipped int) {
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
		index = append(index, i)
	}
	return specs, index, skipped
}
