package slurm

import (
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// squeueRec holds the squeue --json job fields mirage reads, by name, in every schema.
type squeueRec struct {
	JobID, ArrayJobID, ArrayTaskID flexNum
	ArrayTaskString                string
	Name, User, Account            string
	Partition, QOS                 string
	States                         []string
	Reason                         string
	Submit, Eligible, Start, End   flexNum
	Limit, NodeCount, Priority     flexNum
	Comment, Nodes, Dependency     string
	TresReq, TresAlloc             string
	TresPerNode, TresPerJob        string
	Exit                           exitRec
}

// exitRec is an exit code: a raw wait status (22.05) or
// {"status":[...],"return_code":n,"signal":{"id":n,"name":s}} (23.02+).
type exitRec struct {
	Raw        flexNum // 22.05: wait(2) status
	Structured bool
	Code, Sig  flexNum
}

// read parses an exit code in either form.
func (e *exitRec) read(s *scanner) error {
	if s.peek() != '{' {
		n, err := s.num()
		*e = exitRec{Raw: n}
		return err
	}
	*e = exitRec{Structured: true}
	return s.object(func(k []byte) error {
		switch string(k) {
		case "return_code":
			n, err := s.num()
			e.Code = n
			return err
		case "signal":
			if s.peek() != '{' {
				n, err := s.num()
				e.Sig = n
				return err
			}
			// "id" (23.11+) is preferred over "signal_id" (22.05, 23.02), whatever the order.
			var id, sigID flexNum
			err := s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "id":
					id, err = s.num()
				case "signal_id":
					sigID, err = s.num()
				default:
					err = s.skip()
				}
				return err
			})
			e.Sig = id
			if !id.Set {
				e.Sig = sigID
			}
			return err
		}
		return s.skip()
	})
}

// split returns the exit code and the signal.
func (e exitRec) split() (code, sig int) {
	if !e.Structured {
		if !e.Raw.Set {
			return 0, 0
		}
		return waitStatus(e.Raw.N)
	}
	return e.Code.int(), e.Sig.int()
}

// readSqueueJob reads one element of "jobs".
func readSqueueJob(s *scanner, r *squeueRec) error {
	*r = squeueRec{}
	return s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "job_id":
			r.JobID, err = s.num()
		case "array_job_id":
			r.ArrayJobID, err = s.num()
		case "array_task_id":
			r.ArrayTaskID, err = s.num()
		case "array_task_string":
			r.ArrayTaskString, err = s.str()
		case "name":
			r.Name, err = s.str()
		case "user_name":
			r.User, err = s.strIntern()
		case "account":
			r.Account, err = s.strIntern()
		case "partition":
			r.Partition, err = s.strIntern()
		case "qos":
			r.QOS, err = s.strIntern()
		case "job_state":
			r.States, err = s.strs()
		case "state_reason":
			r.Reason, err = s.strIntern()
		case "submit_time":
			r.Submit, err = s.num()
		case "eligible_time":
			r.Eligible, err = s.num()
		case "start_time":
			r.Start, err = s.num()
		case "end_time":
			r.End, err = s.num()
		case "time_limit":
			r.Limit, err = s.num()
		case "node_count":
			r.NodeCount, err = s.num()
		case "priority":
			r.Priority, err = s.num()
		case "comment":
			r.Comment, err = s.str()
		case "nodes":
			r.Nodes, err = s.strIntern()
		case "dependency":
			r.Dependency, err = s.str()
		case "tres_req_str":
			r.TresReq, err = s.strIntern()
		case "tres_alloc_str":
			r.TresAlloc, err = s.strIntern()
		case "tres_per_node":
			r.TresPerNode, err = s.strIntern()
		case "tres_per_job":
			r.TresPerJob, err = s.strIntern()
		case "exit_code":
			err = r.Exit.read(s)
		default:
			err = s.skip()
		}
		return err
	})
}

// ParseSqueueJSON parses `squeue --json` of Slurm 22.05 to 25.x into jobs,
// in the order Slurm lists them. It reads fields by name: plain numbers
// (22.05) and {set,infinite,number} objects (23.02+), job_state as a word or
// a list of base state and flags. Pending jobs get the scheduler's start
// estimate as EstStart. Finished jobs that slurmctld still holds (MinJobAge)
// are included. A document without a version, older than 22.05, or without a
// "jobs" list is an error wrapping ErrUnsupportedVersion.
//
// A list element that is well-formed JSON but not a job record this reader
// understands is left out; Client reads note each one (Client.Skipped).
func ParseSqueueJSON(b []byte) ([]provisioner.Job, Version, error) {
	jobs, _, v, err := parseSqueueJSON(b, parallelMin)
	return jobs, v, err
}

// parseSqueueJSON is ParseSqueueJSON reading lists of minParallel bytes or more with two goroutines.
// It also returns the elements it left out.
func parseSqueueJSON(b []byte, minParallel int) ([]provisioner.Job, []Skipped, Version, error) {
	return parseJobsDoc("squeue --json", b, minParallel, readSqueueJob, (*squeueRec).job)
}

// job converts the record.
func (r *squeueRec) job(hb *hostBudget) (provisioner.Job, error) {
	j := provisioner.Job{
		ID:        jobID(r.JobID, r.ArrayJobID, r.ArrayTaskID, r.ArrayTaskString),
		Name:      r.Name,
		User:      r.User,
		Account:   r.Account,
		Partition: r.Partition,
		QOS:       r.QOS,
		State:     mapStates(r.States...),
		Submit:    r.Submit.unix(),
		Eligible:  r.Eligible.unix(),
		TimeLimit: r.Limit.minutes(),
		Nodes:     r.NodeCount.int(),
		Priority:  r.Priority.N,
		Comment:   r.Comment,
		Depend:    clean(r.Dependency),
	}
	j.Reason = reasonOf(j.State, r.Reason)
	if !r.Priority.known() {
		j.Priority = 0
	}
	start := r.Start.unix()
	var err error
	switch {
	case j.State == provisioner.StatePending:
		j.EstStart = start
	default:
		j.Start = start
		j.NodeList, err = hb.nodeList(r.Nodes)
		if j.State.Finished() {
			j.End = r.End.unix()
			j.ExitCode, j.Signal = r.Exit.split()
			j.Start = startedAt(j)
		}
	}
	j.GPUs, j.GPUType = jobGPUs(j.State, r.TresAlloc, r.TresReq, r.TresPerJob, r.TresPerNode, j.Nodes)
	return j, err
}

// jobGPUs works out a job's GPUs: allocated TRES once it has an allocation,
// else requested TRES, else the per-job or per-node request (times nodes).
func jobGPUs(st provisioner.JobState, alloc, req, perJob, perNode string, nodes int) (int, string) {
	tres := alloc
	if tres == "" || st == provisioner.StatePending {
		tres = req
	}
	if n, typ := gpusFromTRES(tres); n > 0 {
		if typ == "" {
			_, typ = gpusFromGres(nonEmpty(perJob, perNode))
		}
		return n, typ
	}
	if n, typ := gpusFromGres(perJob); n > 0 {
		return n, typ
	}
	if n, typ := gpusFromGres(perNode); n > 0 {
		return n * max(nodes, 1), typ
	}
	return 0, ""
}

// jobID formats a job id: "123", "7_3" for an array task, "7_[2-9%2]" for the
// pending remainder of an array.
func jobID(id, arrayJob, arrayTask flexNum, taskString string) string {
	if arrayJob.Set && !arrayJob.Infinite && arrayJob.N > 0 {
		a := strconv.FormatInt(arrayJob.N, 10)
		if arrayTask.Set && !arrayTask.Infinite && arrayTask.N >= 0 {
			return a + "_" + strconv.FormatInt(arrayTask.N, 10)
		}
		if taskString != "" {
			return a + "_[" + taskString + "]"
		}
	}
	return strconv.FormatInt(id.N, 10)
}

// jobChunks collects jobs in fixed-size blocks and copies them once into an
// exact slice: growing one slice of 50,000 jobs by appending would copy
// (and clear) it many times over.
type jobChunks struct {
	skipped []Skipped // elements that were not job records
	full    []([]provisioner.Job)
	cur     []provisioner.Job
	n       int
}

// Block sizes double from jobChunkMin to jobChunkMax.
const (
	jobChunkMin = 16
	jobChunkMax = 2048
)

// next returns a pointer to a new zero job.
func (c *jobChunks) next() *provisioner.Job {
	if len(c.cur) == cap(c.cur) {
		size := jobChunkMin
		if c.cur != nil {
			c.full = append(c.full, c.cur)
			size = min(2*cap(c.cur), jobChunkMax)
		}
		c.cur = make([]provisioner.Job, 0, size)
	}
	c.cur = c.cur[:len(c.cur)+1]
	c.n++
	return &c.cur[len(c.cur)-1]
}

// appendAll moves the jobs of d after those of c.
func (c *jobChunks) appendAll(d *jobChunks) {
	if c.cur != nil {
		c.full = append(c.full, c.cur)
	}
	c.full = append(c.full, d.full...)
	c.cur = d.cur
	c.n += d.n
	c.skipped = append(c.skipped, d.skipped...)
}

// all returns the jobs in order (an empty, non-nil slice when there are none).
func (c *jobChunks) all() []provisioner.Job {
	if len(c.full) == 0 && c.cur != nil {
		return c.cur
	}
	out := make([]provisioner.Job, 0, c.n)
	for _, b := range c.full {
		out = append(out, b...)
	}
	return append(out, c.cur...)
}

// startedAt is a finished job's start time as squeue should say it:
// slurmctld gives a job cancelled while pending its end time as start time
// (a job with no nodes never ran), so that job has none.
func startedAt(j provisioner.Job) time.Time {
	if j.State.Finished() && len(j.NodeList) == 0 {
		return time.Time{}
	}
	return j.Start
}
