package slurm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// squeueJob holds the squeue --json job fields mirage reads (by name, all versions).
type squeueJob struct {
	JobID        flexNum     `json:"job_id"`
	ArrayJobID   flexNum     `json:"array_job_id"`
	ArrayTaskID  flexNum     `json:"array_task_id"`
	Name         string      `json:"name"`
	UserName     string      `json:"user_name"`
	Account      string      `json:"account"`
	Partition    string      `json:"partition"`
	QOS          string      `json:"qos"`
	JobState     flexStrings `json:"job_state"`
	StateReason  string      `json:"state_reason"`
	SubmitTime   flexNum     `json:"submit_time"`
	EligibleTime flexNum     `json:"eligible_time"`
	StartTime    flexNum     `json:"start_time"`
	EndTime      flexNum     `json:"end_time"`
	TimeLimit    flexNum     `json:"time_limit"`
	NodeCount    flexNum     `json:"node_count"`
	Priority     flexNum     `json:"priority"`
	Comment      string      `json:"comment"`
	Nodes        string      `json:"nodes"`
	Dependency   string      `json:"dependency"`
	TresReqStr   string      `json:"tres_req_str"`
	TresAllocStr string      `json:"tres_alloc_str"`
	TresPerNode  string      `json:"tres_per_node"`
	TresPerJob   string      `json:"tres_per_job"`
}

// ParseSqueueJSON parses `squeue --json` (22.05 and later) into jobs.
// Pending jobs with a start time get it as EstStart (the scheduler's estimate).
func ParseSqueueJSON(b []byte) ([]provisioner.Job, Version, error) {
	var doc struct {
		Meta   meta            `json:"meta"`
		Errors json.RawMessage `json:"errors"`
		Jobs   *[]squeueJob    `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, Version{}, fmt.Errorf("squeue --json: %w", err)
	}
	v, err := doc.Meta.version("squeue --json")
	if err != nil {
		return nil, v, err
	}
	if doc.Jobs == nil {
		return nil, v, fmt.Errorf("squeue --json: no \"jobs\" field in output of Slurm %s: %w", v, ErrUnsupportedVersion)
	}
	out := make([]provisioner.Job, 0, len(*doc.Jobs))
	for i := range *doc.Jobs {
		out = append(out, (*doc.Jobs)[i].job())
	}
	return out, v, nil
}

func (s *squeueJob) job() provisioner.Job {
	j := provisioner.Job{
		ID:        jobID(s.JobID, s.ArrayJobID, s.ArrayTaskID),
		Name:      s.Name,
		User:      s.UserName,
		Account:   s.Account,
		Partition: s.Partition,
		QOS:       s.QOS,
		State:     mapState(s.JobState.first()),
		Reason:    reason(s.StateReason),
		Submit:    s.SubmitTime.unix(),
		Eligible:  s.EligibleTime.unix(),
		TimeLimit: s.TimeLimit.minutes(),
		Nodes:     int(s.NodeCount.N),
		Priority:  s.Priority.N,
		Comment:   s.Comment,
		NodeList:  ExpandHostlist(s.Nodes),
		Depend:    s.Dependency,
	}
	start, end := s.StartTime.unix(), s.EndTime.unix()
	if j.State == provisioner.StatePending {
		j.EstStart = start
		j.NodeList = nil
	} else {
		j.Start = start
		if j.State.Finished() {
			j.End = end
		}
	}
	tres := s.TresAllocStr
	if tres == "" || j.State == provisioner.StatePending {
		tres = s.TresReqStr
	}
	j.GPUs, j.GPUType = gpusFromTRES(tres)
	if j.GPUs == 0 {
		if n, typ := gpusFromGres(s.TresPerNode); n > 0 {
			nodes := j.Nodes
			if nodes < 1 {
				nodes = 1
			}
			j.GPUs, j.GPUType = n*nodes, typ
		} else if n, typ := gpusFromGres(s.TresPerJob); n > 0 {
			j.GPUs, j.GPUType = n, typ
		}
	}
	return j
}

func jobID(id, arrayJob, arrayTask flexNum) string {
	if arrayJob.Set && arrayJob.N > 0 && arrayTask.Set && !arrayTask.Infinite {
		return strconv.FormatInt(arrayJob.N, 10) + "_" + strconv.FormatInt(arrayTask.N, 10)
	}
	return strconv.FormatInt(id.N, 10)
}

func reason(r string) string {
	if r == "None" || r == "(null)" {
		return ""
	}
	return r
}

// mapState maps a Slurm state name ("CANCELLED by 0", "RUNNING", "CG") to a JobState.
func mapState(s string) provisioner.JobState {
	s = strings.ToUpper(strings.TrimSpace(s))
	if i := strings.IndexAny(s, " +"); i >= 0 {
		s = s[:i]
	}
	switch s {
	case "PENDING", "PD", "REQUEUED", "RQ", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED", "S", "RESIZING":
		return provisioner.StatePending
	case "RUNNING", "R", "COMPLETING", "CG", "CONFIGURING", "CF", "STAGE_OUT", "SIGNALING", "STOPPED", "ST":
		return provisioner.StateRunning
	case "COMPLETED", "CD":
		return provisioner.StateCompleted
	case "FAILED", "F", "BOOT_FAIL", "BF", "DEADLINE", "DL", "SPECIAL_EXIT", "SE", "REVOKED", "RV":
		return provisioner.StateFailed
	case "TIMEOUT", "TO":
		return provisioner.StateTimeout
	case "CANCELLED", "CA":
		return provisioner.StateCancelled
	case "PREEMPTED", "PR":
		return provisioner.StatePreempted
	case "NODE_FAIL", "NF":
		return provisioner.StateNodeFail
	case "OUT_OF_MEMORY", "OOM":
		return provisioner.StateOOM
	}
	return provisioner.StateUnknown
}

// gpusFromTRES reads "cpu=1,node=1,gres/gpu=2" or "gres/gpu:a100=2" (total GPUs, type).
func gpusFromTRES(s string) (int, string) {
	total, typ := 0, ""
	typed := 0
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok || !strings.HasPrefix(k, "gres/gpu") {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		if k == "gres/gpu" {
			total = n
		} else if t, ok := strings.CutPrefix(k, "gres/gpu:"); ok {
			typ = t
			typed += n
		}
	}
	if total == 0 {
		total = typed
	}
	return total, typ
}

// gpusFromGres reads per-node GRES strings: "gres:gpu:2", "gres/gpu:a100:2",
// "gpu:4", "gpu:a100:4(S:0-1)", "gpu:2(IDX:0-1)"; several comma-separated entries add up.
func gpusFromGres(s string) (int, string) {
	total, typ := 0, ""
	for _, e := range splitGres(s) {
		e = strings.TrimPrefix(strings.TrimPrefix(e, "gres:"), "gres/")
		if i := strings.IndexByte(e, '('); i >= 0 {
			e = e[:i]
		}
		parts := strings.Split(e, ":")
		if len(parts) == 0 || parts[0] != "gpu" {
			continue
		}
		switch len(parts) {
		case 1:
			total++
		case 2:
			if n, err := strconv.Atoi(parts[1]); err == nil {
				total += n
			} else {
				typ = parts[1]
				total++
			}
		default:
			if n, err := strconv.Atoi(parts[len(parts)-1]); err == nil {
				total += n
				typ = parts[1]
			}
		}
	}
	return total, typ
}

// splitGres splits on commas that are not inside parentheses.
func splitGres(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// ExpandHostlist expands a Slurm hostlist like "node[1-3,7],gpu01" into names.
func ExpandHostlist(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "None assigned" {
		return nil
	}
	var out []string
	for _, part := range splitBrackets(s) {
		i := strings.IndexByte(part, '[')
		if i < 0 || !strings.HasSuffix(part, "]") {
			out = append(out, part)
			continue
		}
		prefix, ranges := part[:i], part[i+1:len(part)-1]
		for _, r := range strings.Split(ranges, ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if !isRange || err1 != nil || err2 != nil || b < a || b-a > 100000 {
				out = append(out, prefix+r)
				continue
			}
			for n := a; n <= b; n++ {
				out = append(out, fmt.Sprintf("%s%0*d", prefix, len(lo), n))
			}
		}
	}
	return out
}

// splitBrackets splits on commas outside square brackets.
func splitBrackets(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				if start < i {
					out = append(out, s[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// sacctJob holds the sacct --json fields mirage reads.
type sacctJob struct {
	JobID       flexNum `json:"job_id"`
	Name        string  `json:"name"`
	User        string  `json:"user"`
	Account     string  `json:"account"`
	Partition   string  `json:"partition"`
	QOS         string  `json:"qos"`
	Nodes       string  `json:"nodes"`
	AllocNodes  flexNum `json:"allocation_nodes"`
	Priority    flexNum `json:"priority"`
	Association struct {
		Account string `json:"account"`
		User    string `json:"user"`
	} `json:"association"`
	Array struct {
		JobID  flexNum `json:"job_id"`
		TaskID flexNum `json:"task_id"`
	} `json:"array"`
	State struct {
		Current flexStrings `json:"current"`
		Reason  string      `json:"reason"`
	} `json:"state"`
	Time struct {
		Eligible   flexNum `json:"eligible"`
		Start      flexNum `json:"start"`
		End        flexNum `json:"end"`
		Submission flexNum `json:"submission"`
		Limit      flexNum `json:"limit"`
	} `json:"time"`
	ExitCode struct {
		ReturnCode flexNum `json:"return_code"`
		Signal     struct {
			SignalID flexNum `json:"signal_id"`
			ID       flexNum `json:"id"`
		} `json:"signal"`
	} `json:"exit_code"`
	Comment json.RawMessage `json:"comment"`
	TRES    struct {
		Allocated []tres `json:"allocated"`
		Requested []tres `json:"requested"`
	} `json:"tres"`
}

type tres struct {
	Type  string  `json:"type"`
	Name  string  `json:"name"`
	Count flexNum `json:"count"`
}

// ParseSacctJSON parses `sacct --json` (22.05 and later) into finished and live jobs.
func ParseSacctJSON(b []byte) ([]provisioner.Job, Version, error) {
	var doc struct {
		Meta meta        `json:"meta"`
		Jobs *[]sacctJob `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, Version{}, fmt.Errorf("sacct --json: %w", err)
	}
	v, err := doc.Meta.version("sacct --json")
	if err != nil {
		return nil, v, err
	}
	if doc.Jobs == nil {
		return nil, v, fmt.Errorf("sacct --json: no \"jobs\" field in output of Slurm %s: %w", v, ErrUnsupportedVersion)
	}
	out := make([]provisioner.Job, 0, len(*doc.Jobs))
	for i := range *doc.Jobs {
		out = append(out, (*doc.Jobs)[i].job())
	}
	return out, v, nil
}

func (s *sacctJob) job() provisioner.Job {
	j := provisioner.Job{
		ID:        jobID(s.JobID, s.Array.JobID, s.Array.TaskID),
		Name:      s.Name,
		User:      firstNonEmpty(s.User, s.Association.User),
		Account:   firstNonEmpty(s.Account, s.Association.Account),
		Partition: s.Partition,
		QOS:       s.QOS,
		State:     mapState(s.State.Current.first()),
		Reason:    reason(s.State.Reason),
		Submit:    s.Time.Submission.unix(),
		Eligible:  s.Time.Eligible.unix(),
		Start:     s.Time.Start.unix(),
		End:       s.Time.End.unix(),
		TimeLimit: s.Time.Limit.minutes(),
		Nodes:     int(s.AllocNodes.N),
		Priority:  s.Priority.N,
		Comment:   sacctComment(s.Comment),
		NodeList:  ExpandHostlist(s.Nodes),
		ExitCode:  int(s.ExitCode.ReturnCode.N),
		Signal:    int(max(s.ExitCode.Signal.SignalID.N, s.ExitCode.Signal.ID.N)),
	}
	list := s.TRES.Allocated
	if j.State == provisioner.StatePending || len(list) == 0 {
		list = s.TRES.Requested
	}
	for _, t := range list {
		if t.Type == "node" && j.Nodes == 0 {
			j.Nodes = int(t.Count.N)
		}
		if t.Type == "gres" && (t.Name == "gpu" || strings.HasPrefix(t.Name, "gpu:")) {
			if t.Name == "gpu" {
				j.GPUs = int(t.Count.N)
			} else if j.GPUs == 0 {
				j.GPUs = int(t.Count.N)
				j.GPUType = strings.TrimPrefix(t.Name, "gpu:")
			}
		}
	}
	if j.State == provisioner.StatePending {
		j.Start, j.End, j.NodeList = time.Time{}, time.Time{}, nil
	}
	return j
}

// sacctComment reads "comment": a string or {"job":..., "administrator":..., "system":...}.
func sacctComment(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	var o struct {
		Job *string `json:"job"`
	}
	if json.Unmarshal(b, &o) == nil && o.Job != nil {
		return *o.Job
	}
	return ""
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}

// sinfoNode holds the sinfo --json node fields mirage reads.
type sinfoNode struct {
	Name       string      `json:"name"`
	State      flexStrings `json:"state"`
	StateFlags []string    `json:"state_flags"`
	CPUs       flexNum     `json:"cpus"`
	AllocCPUs  flexNum     `json:"alloc_cpus"`
	Gres       string      `json:"gres"`
	GresUsed   string      `json:"gres_used"`
	Partitions []string    `json:"partitions"`
}

// ParseSinfoJSON parses `sinfo --json` into nodes with GPU totals and use.
// 22.05 lists nodes at the top level; 23.x+ list them under "sinfo" entries,
// where one node can appear once per partition (merged here).
func ParseSinfoJSON(b []byte) ([]provisioner.Node, Version, error) {
	var doc struct {
		Meta  meta         `json:"meta"`
		Nodes *[]sinfoNode `json:"nodes"`
		Sinfo []struct {
			Nodes struct {
				Nodes []string `json:"nodes"`
			} `json:"nodes"`
			Partition struct {
				Name string `json:"name"`
			} `json:"partition"`
			Node struct {
				State flexStrings `json:"state"`
			} `json:"node"`
			CPUs struct {
				Allocated flexNum `json:"allocated"`
				Total     flexNum `json:"total"`
			} `json:"cpus"`
			Gres struct {
				Total string `json:"total"`
				Used  string `json:"used"`
			} `json:"gres"`
		} `json:"sinfo"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, Version{}, fmt.Errorf("sinfo --json: %w", err)
	}
	v, err := doc.Meta.version("sinfo --json")
	if err != nil {
		return nil, v, err
	}
	var out []provisioner.Node
	switch {
	case doc.Nodes != nil:
		for _, n := range *doc.Nodes {
			node := provisioner.Node{
				Name:       n.Name,
				State:      mapNodeState(append(append([]string{}, n.State...), n.StateFlags...)),
				CPUs:       int(n.CPUs.N),
				CPUsUsed:   int(n.AllocCPUs.N),
				Partitions: n.Partitions,
			}
			node.GPUs, node.GPUType = gpusFromGres(n.Gres)
			node.GPUsUsed, _ = gpusFromGres(n.GresUsed)
			out = append(out, node)
		}
	case doc.Sinfo != nil:
		idx := map[string]int{}
		for _, e := range doc.Sinfo {
			for _, name := range e.Nodes.Nodes {
				if i, ok := idx[name]; ok {
					if e.Partition.Name != "" {
						out[i].Partitions = append(out[i].Partitions, e.Partition.Name)
					}
					continue
				}
				node := provisioner.Node{Name: name, State: mapNodeState(e.Node.State)}
				if len(e.Nodes.Nodes) == 1 {
					node.CPUs, node.CPUsUsed = int(e.CPUs.Total.N), int(e.CPUs.Allocated.N)
					node.GPUs, node.GPUType = gpusFromGres(e.Gres.Total)
					node.GPUsUsed, _ = gpusFromGres(e.Gres.Used)
				}
				if e.Partition.Name != "" {
					node.Partitions = []string{e.Partition.Name}
				}
				idx[name] = len(out)
				out = append(out, node)
			}
		}
	default:
		return nil, v, fmt.Errorf("sinfo --json: neither \"nodes\" nor \"sinfo\" in output of Slurm %s: %w", v, ErrUnsupportedVersion)
	}
	return out, v, nil
}

// mapNodeState maps Slurm node state words ("idle", "MIXED", "DRAIN", "DOWN*") to a NodeState.
func mapNodeState(words []string) provisioner.NodeState {
	st := provisioner.NodeUp
	for _, w := range words {
		w = strings.ToUpper(strings.TrimRight(w, "*~#!%$@^-"))
		for _, p := range strings.Split(w, "+") {
			switch p {
			case "DOWN", "FAIL", "FAILING", "NOT_RESPONDING", "NO_RESPOND", "UNKNOWN", "FUTURE", "POWERED_DOWN", "POWER_DOWN", "POWERING_DOWN", "INVALID", "INVALID_REG", "REBOOT_REQUESTED", "REBOOT_ISSUED":
				return provisioner.NodeDown
			case "DRAIN", "DRAINED", "DRAINING", "MAINT":
				st = provisioner.NodeDrained
			case "RESERVED", "RESV":
				if st == provisioner.NodeUp {
					st = provisioner.NodeReserved
				}
			}
		}
	}
	return st
}
