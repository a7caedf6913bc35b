package slurm

import (
	"strconv"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// sacctRec holds the sacct --json job fields mirage reads.
type sacctRec struct {
	JobID                        flexNum
	Name, User, Account          string
	AssocUser, AssocAccount      string
	Partition, QOS, Nodes        string
	AllocNodes, Priority         flexNum
	ArrayJobID, ArrayTaskID      flexNum
	ArrayTask                    string
	ArrayMaxRunning              flexNum
	States                       []string
	Reason                       string
	Submit, Eligible, Start, End flexNum
	Limit                        flexNum
	Exit                         exitRec
	Comment                      string
	Alloc, Req                   []tresRec
}

// tresRec is one TRES entry: {"type":"gres","name":"gpu","count":2}.
type tresRec struct {
	Type, Name string
	Count      flexNum
}

func readTRESList(s *scanner) ([]tresRec, error) {
	var out []tresRec
	err := s.array(func() error {
		var t tresRec
		err := s.object(func(k []byte) error {
			var err error
			switch string(k) {
			case "type":
				t.Type, err = s.str()
			case "name":
				t.Name, err = s.str()
			case "count":
				t.Count, err = s.num()
			default:
				err = s.skip()
			}
			return err
		})
		out = append(out, t)
		return err
	})
	return out, err
}

// readSacctJob reads one element of "jobs" (steps are skipped).
func readSacctJob(s *scanner, r *sacctRec) error {
	*r = sacctRec{}
	return s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "job_id":
			r.JobID, err = s.num()
		case "name":
			r.Name, err = s.str()
		case "user":
			r.User, err = s.strIntern()
		case "account":
			r.Account, err = s.strIntern()
		case "partition":
			r.Partition, err = s.strIntern()
		case "qos":
			r.QOS, err = s.strIntern()
		case "nodes":
			r.Nodes, err = s.strIntern()
		case "allocation_nodes":
			r.AllocNodes, err = s.num()
		case "priority":
			r.Priority, err = s.num()
		case "association":
			r.AssocUser, r.AssocAccount = "", ""
			err = s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "user":
					r.AssocUser, err = s.str()
				case "account":
					r.AssocAccount, err = s.str()
				default:
					err = s.skip()
				}
				return err
			})
		case "array":
			r.ArrayJobID, r.ArrayTaskID, r.ArrayTask, r.ArrayMaxRunning = flexNum{}, flexNum{}, "", flexNum{}
			err = s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "job_id":
					r.ArrayJobID, err = s.num()
				case "task_id":
					r.ArrayTaskID, err = s.num()
				case "task":
					r.ArrayTask, err = s.str()
				case "limits": // {"max":{"running":{"tasks":N}}}
					r.ArrayMaxRunning = flexNum{}
					err = s.object(func(k []byte) error {
						if string(k) != "max" {
							return s.skip()
						}
						return s.object(func(k []byte) error {
							if string(k) != "running" {
								return s.skip()
							}
							return s.object(func(k []byte) error {
								if string(k) != "tasks" {
									return s.skip()
								}
								var err error
								r.ArrayMaxRunning, err = s.num()
								return err
							})
						})
					})
				default:
					err = s.skip()
				}
				return err
			})
		case "state":
			r.States, r.Reason = nil, ""
			err = s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "current":
					r.States, err = s.strs()
				case "reason":
					r.Reason, err = s.str()
				default:
					err = s.skip()
				}
				return err
			})
		case "time":
			r.Submit, r.Eligible, r.Start, r.End, r.Limit = flexNum{}, flexNum{}, flexNum{}, flexNum{}, flexNum{}
			err = s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "submission":
					r.Submit, err = s.num()
				case "eligible":
					r.Eligible, err = s.num()
				case "start":
					r.Start, err = s.num()
				case "end":
					r.End, err = s.num()
				case "limit":
					r.Limit, err = s.num()
				default:
					err = s.skip()
				}
				return err
			})
		case "exit_code":
			err = r.Exit.read(s)
		case "comment":
			if s.peek() != '{' {
				r.Comment, err = s.str()
				break
			}
			r.Comment = ""
			err = s.object(func(k []byte) error {
				if string(k) == "job" {
					var err error
					r.Comment, err = s.str()
					return err
				}
				return s.skip()
			})
		case "tres":
			r.Alloc, r.Req = nil, nil
			err = s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "allocated":
					r.Alloc, err = readTRESList(s)
				case "requested":
					r.Req, err = readTRESList(s)
				default:
					err = s.skip()
				}
				return err
			})
		default:
			err = s.skip()
		}
		return err
	})
}

// ParseSacctJSON parses `sacct --json` of Slurm 22.05 to 25.x into jobs (one
// per job allocation; steps are ignored), in the order sacct lists them.
//
// Known gaps of Slurm 22.05's sacct --json (openapi/dbv0.0.38), seen on the
// project's test cluster: the job's exit code is always reported as 0 and the
// comment as null. History therefore reads `sacct --parsable2` on 22.05.
//
// A list element that is well-formed JSON but not a job record this reader
// understands is left out; Client reads note each one (Client.Skipped).
func ParseSacctJSON(b []byte) ([]provisioner.Job, Version, error) {
	jobs, _, v, err := parseSacctJSON(b, parallelMin)
	return jobs, v, err
}

// parseSacctJSON is ParseSacctJSON reading lists of minParallel bytes or more with two goroutines.
// It also returns the elements it left out.
func parseSacctJSON(b []byte, minParallel int) ([]provisioner.Job, []Skipped, Version, error) {
	return parseJobsDoc("sacct --json", b, minParallel, readSacctJob, (*sacctRec).job)
}

// job converts the record.
func (r *sacctRec) job(hb *hostBudget) (provisioner.Job, error) {
	j := provisioner.Job{
		ID:        jobID(r.JobID, r.ArrayJobID, r.ArrayTaskID, arrayTasks(r.ArrayTask, r.ArrayMaxRunning.int())),
		Name:      r.Name,
		User:      nonEmpty(r.User, r.AssocUser),
		Account:   nonEmpty(r.Account, r.AssocAccount),
		Partition: r.Partition,
		QOS:       r.QOS,
		State:     mapStates(r.States...),
		Reason:    clean(r.Reason),
		Submit:    r.Submit.unix(),
		Eligible:  r.Eligible.unix(),
		TimeLimit: r.Limit.minutes(),
		Nodes:     r.AllocNodes.int(),
		Comment:   r.Comment,
	}
	if r.Priority.known() {
		j.Priority = r.Priority.N
	}
	var err error
	if j.State != provisioner.StatePending {
		j.Start = r.Start.unix()
		j.NodeList, err = hb.nodeList(r.Nodes)
		if j.State.Finished() {
			j.End = r.End.unix()
			j.ExitCode, j.Signal = r.Exit.split()
		}
	}
	list := r.Alloc
	if j.State == provisioner.StatePending || len(list) == 0 {
		list = r.Req
	}
	typed := 0
	for _, t := range list {
		switch {
		case t.Type == "node" && j.Nodes == 0:
			j.Nodes = t.Count.int()
		case t.Type == "gres" && t.Name == "gpu":
			j.GPUs = t.Count.int()
		case t.Type == "gres" && strings.HasPrefix(t.Name, "gpu:"):
			typed += t.Count.int()
			j.GPUType = strings.TrimPrefix(t.Name, "gpu:")
		}
	}
	if j.GPUs == 0 {
		j.GPUs = typed
	}
	return j, err
}

// arrayTasks renders the task set of an array's pending remainder as squeue
// and sacct's text print it ("1-3%1"). sacct --json gives it as a hex bitmap
// ("0xE": tasks 1, 2, 3) and the running limit apart; other forms pass through.
func arrayTasks(task string, maxRunning int) string {
	hex, ok := strings.CutPrefix(task, "0x")
	if !ok || hex == "" || len(hex) > 1<<14 {
		return task
	}
	var ranges []string
	start := -1
	bits := len(hex) * 4
	for i := 0; i <= bits; i++ {
		set := false
		if i < bits {
			c := hex[len(hex)-1-i/4]
			var v byte
			switch {
			case c >= '0' && c <= '9':
				v = c - '0'
			case c >= 'a' && c <= 'f':
				v = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				v = c - 'A' + 10
			default:
				return task
			}
			set = v&(1<<(i%4)) != 0
		}
		switch {
		case set && start < 0:
			start = i
		case !set && start >= 0:
			if start == i-1 {
				ranges = append(ranges, strconv.Itoa(start))
			} else {
				ranges = append(ranges, strconv.Itoa(start)+"-"+strconv.Itoa(i-1))
			}
			start = -1
		}
	}
	if len(ranges) == 0 {
		return task
	}
	out := strings.Join(ranges, ",")
	if maxRunning > 0 {
		out += "%" + strconv.Itoa(maxRunning)
	}
	return out
}
