package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Sep separates fields in the text formats mirage asks for (ASCII unit separator:
// never in job names or comments typed by users).
const Sep = "\x1f"

// SqueueFormat is the `squeue -o` format ParseSqueueText reads (fallback when --json is unavailable).
// Fields: id, name, user, account, partition, qos, state, reason, submit, start (or estimate),
// end, limit, nodes, tres-per-node, priority, nodelist, dependency, comment (last: may hold anything).
var SqueueFormat = strings.Join([]string{"%i", "%j", "%u", "%a", "%P", "%q", "%T", "%r", "%V", "%S", "%e", "%l", "%D", "%b", "%Q", "%N", "%E", "%k"}, Sep)

// ParseSqueueText parses `squeue -h -o SqueueFormat` output; times are read in loc.
func ParseSqueueText(b []byte, loc *time.Location) ([]provisioner.Job, error) {
	var out []provisioner.Job
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.SplitN(l, Sep, 18)
		if len(f) != 18 {
			return nil, fmt.Errorf("squeue: line %d: %d fields, want 18", line, len(f))
		}
		j := provisioner.Job{
			ID: f[0], Name: f[1], User: f[2], Account: f[3], Partition: f[4], QOS: f[5],
			State: mapState(f[6]), Reason: reason(f[7]), Comment: nullStr(f[17]), Depend: nullStr(f[16]),
		}
		var err error
		if j.Submit, err = parseSlurmTime(f[8], loc); err != nil {
			return nil, fmt.Errorf("squeue: line %d: submit: %w", line, err)
		}
		start, err := parseSlurmTime(f[9], loc)
		if err != nil {
			return nil, fmt.Errorf("squeue: line %d: start: %w", line, err)
		}
		if j.State == provisioner.StatePending {
			j.EstStart = start
		} else {
			j.Start = start
			j.NodeList = ExpandHostlist(f[15])
		}
		if j.TimeLimit, err = ParseDuration(f[11]); err != nil {
			return nil, fmt.Errorf("squeue: line %d: time limit: %w", line, err)
		}
		if j.Nodes, err = strconv.Atoi(f[12]); err != nil {
			return nil, fmt.Errorf("squeue: line %d: nodes %q: %w", line, f[12], err)
		}
		if n, typ := gpusFromGres(nullStr(f[13])); n > 0 {
			j.GPUs, j.GPUType = n*max(j.Nodes, 1), typ
		}
		j.Priority, _ = strconv.ParseInt(f[14], 10, 64)
		out = append(out, j)
	}
	return out, sc.Err()
}

func nullStr(s string) string {
	s = strings.TrimSpace(s)
	if s == "(null)" || s == "N/A" {
		return ""
	}
	return s
}

// parseSlurmTime reads "2026-11-22T19:13:57"; "N/A", "Unknown", "None", "" are the zero time.
func parseSlurmTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "N/A", "Unknown", "None", "(null)", "0":
		return time.Time{}, nil
	}
	if loc == nil {
		loc = time.Local
	}
	return time.ParseInLocation("2006-01-02T15:04:05", s, loc)
}

// ParseDuration reads Slurm durations: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM",
// "D-HH:MM:SS"; "UNLIMITED", "INVALID", "Partition_Limit", "N/A" are 0.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "", "UNLIMITED", "INVALID", "PARTITION_LIMIT", "N/A", "NONE", "(NULL)":
		return 0, nil
	}
	days := 0
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("duration %q: bad days", s)
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("duration %q: bad number %q", s, p)
		}
		nums[i] = n
	}
	var h, m, sec int
	switch {
	case days > 0 && len(nums) == 1:
		h = nums[0]
	case days > 0 && len(nums) == 2:
		h, m = nums[0], nums[1]
	case len(nums) == 1:
		m = nums[0]
	case len(nums) == 2:
		m, sec = nums[0], nums[1]
	case len(nums) == 3:
		h, m, sec = nums[0], nums[1], nums[2]
	default:
		return 0, fmt.Errorf("duration %q: too many fields", s)
	}
	return time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second, nil
}

// SacctFields are the `sacct -P -o` fields ParseSacctParsable reads, in order.
var SacctFields = []string{"JobID", "JobName", "User", "Account", "Partition", "QOS", "State", "Reason", "Submit", "Eligible", "Start", "End", "Timelimit", "NNodes", "AllocTRES", "ReqTRES", "Priority", "NodeList", "ExitCode", "Comment"}

// ParseSacctParsable parses `sacct -X -P -n -o SacctFields` output ("|" separated; the
// comment is the last field, so a "|" inside it is kept). Job steps (ids with ".") are skipped.
func ParseSacctParsable(b []byte, loc *time.Location) ([]provisioner.Job, error) {
	var out []provisioner.Job
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.SplitN(l, "|", len(SacctFields))
		if len(f) != len(SacctFields) {
			return nil, fmt.Errorf("sacct: line %d: %d fields, want %d", line, len(f), len(SacctFields))
		}
		if f[0] == "JobID" || strings.Contains(f[0], ".") {
			continue
		}
		j := provisioner.Job{ID: f[0], Name: f[1], User: f[2], Account: f[3], Partition: f[4], QOS: f[5],
			State: mapState(f[6]), Reason: reason(f[7]), Comment: nullStr(f[19])}
		var err error
		times := []*time.Time{&j.Submit, &j.Eligible, &j.Start, &j.End}
		for i, p := range times {
			if *p, err = parseSlurmTime(f[8+i], loc); err != nil {
				return nil, fmt.Errorf("sacct: line %d: %s: %w", line, SacctFields[8+i], err)
			}
		}
		if j.TimeLimit, err = ParseDuration(f[12]); err != nil {
			return nil, fmt.Errorf("sacct: line %d: %w", line, err)
		}
		j.Nodes, _ = strconv.Atoi(f[13])
		tr := f[14]
		if j.State == provisioner.StatePending || tr == "" {
			tr = f[15]
		}
		j.GPUs, j.GPUType = gpusFromTRES(tr)
		j.Priority, _ = strconv.ParseInt(f[16], 10, 64)
		if j.State != provisioner.StatePending {
			j.NodeList = ExpandHostlist(f[17])
		} else {
			j.Start, j.End = time.Time{}, time.Time{}
		}
		if c, s, ok := strings.Cut(f[18], ":"); ok {
			j.ExitCode, _ = strconv.Atoi(c)
			j.Signal, _ = strconv.Atoi(s)
		}
		out = append(out, j)
	}
	return out, sc.Err()
}

// ParseScontrolJob parses `scontrol show job -o` output (one job per line,
// Key=Value pairs) into maps keyed by field name. Values may contain spaces only
// for the last keys (Command, WorkDir, Comment...); a token without "=" is
// appended to the previous value.
func ParseScontrolJob(b []byte) ([]map[string]string, error) {
	var out []map[string]string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "No jobs in the system") {
			continue
		}
		m := map[string]string{}
		last := ""
		for _, tok := range strings.Fields(l) {
			k, v, ok := strings.Cut(tok, "=")
			if !ok || k == "" || strings.ContainsAny(k, "/:,") {
				if last == "" {
					return nil, fmt.Errorf("scontrol: token %q before any key", tok)
				}
				m[last] += " " + tok
				continue
			}
			m[k] = v
			last = k
		}
		if _, ok := m["JobId"]; !ok {
			return nil, fmt.Errorf("scontrol: line without JobId: %.80q", l)
		}
		out = append(out, m)
	}
	return out, nil
}

// ParseStartText parses `squeue --start -h -o "%i<Sep>%S<Sep>%r"`: job id → estimated start
// (jobs without an estimate, "N/A", are left out).
func ParseStartText(b []byte, loc *time.Location) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.Split(l, Sep)
		if len(f) < 2 {
			return nil, fmt.Errorf("squeue --start: line %d: %d fields", i+1, len(f))
		}
		t, err := parseSlurmTime(f[1], loc)
		if err != nil {
			return nil, fmt.Errorf("squeue --start: line %d: %w", i+1, err)
		}
		if !t.IsZero() {
			out[strings.TrimSpace(f[0])] = t
		}
	}
	return out, nil
}

// ParseSbatch reads `sbatch --parsable` output: "123" or "123;cluster".
func ParseSbatch(b []byte) (string, error) {
	s := firstLine(b)
	id, _, _ := strings.Cut(s, ";")
	if id == "" {
		return "", fmt.Errorf("sbatch: no job id in output %q", s)
	}
	for _, c := range id {
		if (c < '0' || c > '9') && c != '_' {
			return "", fmt.Errorf("sbatch: unexpected output %q", s)
		}
	}
	return id, nil
}
