package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// csvJobReader drives the comma-separated formats (openb, Helios, canonical
// CSV): it reads the header row, maps column names to indices and hands each
// record to parse.
type csvJobReader struct {
	lineReader
	format   Format
	cr       *csv.Reader
	required []string
	col      map[string]int
	ncol     int
	parse    func(rec []string, j *Job) (bool, *ParseError)
}

func newCSVJobReader(lr lineReader, format Format, required []string) *csvJobReader {
	cr := csv.NewReader(lr.br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return &csvJobReader{lineReader: lr, format: format, cr: cr, required: required}
}

// Format implements Reader.
func (r *csvJobReader) Format() Format { return r.format }

// get returns column name of rec, or "" when the file has no such column.
func (r *csvJobReader) get(rec []string, name string) (string, bool) {
	i, ok := r.col[name]
	if !ok {
		return "", false
	}
	return rec[i], true
}

// Next implements Reader.
func (r *csvJobReader) Next() (Job, error) {
	for {
		rec, err := r.cr.Read()
		if err == io.EOF {
			return Job{}, io.EOF
		}
		if err != nil {
			var ce *csv.ParseError
			if errors.As(err, &ce) {
				r.line = ce.Line
				if err := r.bad(&ParseError{Field: "row", Want: "valid CSV", Got: ce.Err.Error()}); err != nil {
					return Job{}, err
				}
				continue
			}
			return Job{}, fmt.Errorf("traces: %s: %w", r.file, err)
		}
		r.line, _ = r.cr.FieldPos(0)
		if r.col == nil {
			r.col = make(map[string]int, len(rec))
			for i, n := range rec {
				r.col[strings.TrimSpace(strings.TrimPrefix(n, "\ufeff"))] = i
			}
			r.ncol = len(rec)
			for _, need := range r.required {
				if _, ok := r.col[need]; !ok {
					r.col = nil
					return Job{}, &ParseError{File: r.file, Line: r.line, Field: "header", Want: "a column named " + need, Got: strings.Join(rec, ","), fatal: true}
				}
			}
			continue
		}
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		var j Job
		if len(rec) != r.ncol {
			if err := r.bad(&ParseError{Field: "row", Want: itoa(r.ncol) + " comma-separated fields (as in the header)", Got: itoa(len(rec)) + " fields"}); err != nil {
				return Job{}, err
			}
			continue
		}
		keep, pe := r.parse(rec, &j)
		if pe != nil {
			if err := r.bad(pe); err != nil {
				return Job{}, err
			}
			continue
		}
		if keep {
			return j, nil
		}
	}
}

func perrS(field, want, got string) *ParseError {
	if len(got) > maxGot {
		got = got[:maxGot] + "..."
	}
	return &ParseError{Field: field, Want: want, Got: got}
}

// ---- Alibaba PAI openb pod list ----

// openb pod list columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli,
// gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time
// (times in seconds since the trace start; the multigpu lists have only the
// first five columns). Mapping: ID = name; Submit = Epoch + creation_time;
// Start = Epoch + scheduled_time (zero when empty: Pending); End = Epoch +
// deletion_time for scheduled pods (for Running pods this is the end of
// observation); GPUs = num_gpu (a sharing pod counts the one GPU it shares)
// and GPUMilli = gpu_milli when num_gpu is 1 and gpu_milli < 1000; GPUType =
// gpu_spec (models separated by '|'); CPUs = cpu_milli/1000 rounded up;
// Partition = qos; State from pod_phase (Succeeded COMPLETED, Failed FAILED,
// Running RUNNING, Pending PENDING); Nodes = 1. No user, no time limit.
func newOpenBReader(lr lineReader, epoch time.Time) (Reader, error) {
	r := newCSVJobReader(lr, FormatOpenB, []string{"name", "num_gpu"})
	in := interner{}
	r.parse = func(rec []string, j *Job) (bool, *ParseError) {
		j.ID, _ = r.get(rec, "name")
		j.Nodes = 1
		ints := func(name string) (int64, bool, *ParseError) {
			s, ok := r.get(rec, name)
			if !ok || s == "" {
				return 0, false, nil
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return 0, false, perrS(name, "a non-negative integer", s)
			}
			return n, true, nil
		}
		cpu, _, pe := ints("cpu_milli")
		if pe != nil {
			return false, pe
		}
		j.CPUs = int((cpu + 999) / 1000)
		gpus, _, pe := ints("num_gpu")
		if pe != nil {
			return false, pe
		}
		j.GPUs = int(gpus)
		milli, _, pe := ints("gpu_milli")
		if pe != nil {
			return false, pe
		}
		if gpus == 1 && milli > 0 && milli < 1000 {
			j.GPUMilli = int(milli)
		}
		if s, ok := r.get(rec, "gpu_spec"); ok {
			j.GPUType = in.get([]byte(s))
		}
		if s, ok := r.get(rec, "qos"); ok {
			j.Partition = in.get([]byte(s))
		}
		if s, ok := r.get(rec, "pod_phase"); ok {
			switch s {
			case "Succeeded":
				j.State = StateCompleted
			case "Failed":
				j.State = StateFailed
			case "Running":
				j.State = StateRunning
			case "Pending":
				j.State = StatePending
			case "":
			default:
				return false, perrS("pod_phase", "Running, Failed, Pending or Succeeded", s)
			}
		}
		sec := func(n int64) time.Time { return epoch.Add(time.Duration(n) * time.Second) }
		c, hasC, pe := ints("creation_time")
		if pe != nil {
			return false, pe
		}
		if hasC {
			j.Submit = sec(c)
		}
		s, hasS, pe := ints("scheduled_time")
		if pe != nil {
			return false, pe
		}
		d, hasD, pe := ints("deletion_time")
		if pe != nil {
			return false, pe
		}
		if hasS {
			j.Start = sec(s)
			if hasD {
				if d < s {
					return false, perrS("deletion_time", "a time not before scheduled_time "+itoa(int(s)), itoa(int(d)))
				}
				j.End = sec(d)
			}
		}
		return true, nil
	}
	return r, nil
}

// Node is one machine of a node list (the openb node lists).
type Node struct {
	Name      string // node name (sn)
	CPUMilli  int    // CPU in thousandths
	MemoryMiB int    // memory in MiB
	GPUs      int    // whole GPUs
	Model     string // GPU model ("" for CPU-only nodes)
}

// ReadNodes reads an openb node list (sn,cpu_milli,memory_mib,gpu,model),
// gzipped or not. Node lists are small, so it returns them all.
func ReadNodes(path string) ([]Node, error) {
	f, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("traces: %s: %w", path, err)
	}
	col := map[string]int{}
	for i, n := range header {
		col[n] = i
	}
	for _, need := range []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"} {
		if _, ok := col[need]; !ok {
			return nil, &ParseError{File: path, Line: 1, Field: "header", Want: "a column named " + need, Got: strings.Join(header, ",")}
		}
	}
	var nodes []Node
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nodes, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, &ParseError{File: path, Line: line, Field: "row", Want: "valid CSV with " + itoa(len(header)) + " fields", Got: err.Error()}
		}
		n := Node{Name: rec[col["sn"]], Model: rec[col["model"]]}
		for _, p := range []struct {
			name string
			dst  *int
		}{{"cpu_milli", &n.CPUMilli}, {"memory_mib", &n.MemoryMiB}, {"gpu", &n.GPUs}} {
			v, err := strconv.Atoi(rec[col[p.name]])
			if err != nil || v < 0 {
				return nil, &ParseError{File: path, Line: line, Field: p.name, Want: "a non-negative integer", Got: rec[col[p.name]]}
			}
			*p.dst = v
		}
		nodes = append(nodes, n)
	}
}

// ---- Helios cluster_log.csv ----

// Helios job log (HeliosData cluster_log.csv) columns, parsed by name:
// job_id, user, vc, [jobname], gpu_num, cpu_num, node_num, state,
// submit_time, start_time, end_time, duration, queue. Times are
// "YYYY-MM-DD HH:MM:SS" (read in Options.Location, default UTC) or Unix
// seconds; empty start/end mean the job never ran. Mapping: Account = vc;
// GPUs = gpu_num; CPUs = cpu_num; Nodes = node_num; State = state
// (Slurm names: COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL).
// duration and queue (seconds) are redundant with the times and checked
// only for syntax. Helios has no time limit column.
func newHeliosReader(lr lineReader, loc *time.Location) (Reader, error) {
	r := newCSVJobReader(lr, FormatHelios, []string{"job_id", "submit_time"})
	in := interner{}
	r.parse = func(rec []string, j *Job) (bool, *ParseError) {
		j.ID, _ = r.get(rec, "job_id")
		if j.ID == "" {
			return false, perrS("job_id", "a job id", "")
		}
		if s, ok := r.get(rec, "user"); ok {
			j.User = in.get([]byte(s))
		}
		if s, ok := r.get(rec, "vc"); ok {
			j.Account = in.get([]byte(s))
		}
		if s, ok := r.get(rec, "jobname"); ok {
			j.Name = s
		}
		for _, p := range []struct {
			name string
			dst  *int
		}{{"gpu_num", &j.GPUs}, {"cpu_num", &j.CPUs}, {"node_num", &j.Nodes}, {"duration", nil}, {"queue", nil}} {
			s, ok := r.get(rec, p.name)
			if !ok || s == "" {
				continue
			}
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 {
				return false, perrS(p.name, "a non-negative integer", s)
			}
			if p.dst != nil {
				*p.dst = v
			}
		}
		if s, ok := r.get(rec, "state"); ok && s != "" {
			j.State = State(in.get([]byte(strings.ToUpper(s))))
		}
		for _, p := range []struct {
			name string
			dst  *time.Time
		}{{"submit_time", &j.Submit}, {"start_time", &j.Start}, {"end_time", &j.End}} {
			s, _ := r.get(rec, p.name)
			if s == "" {
				if p.name == "submit_time" {
					return false, perrS(p.name, "a time YYYY-MM-DD HH:MM:SS or Unix seconds", s)
				}
				continue
			}
			t, ok := parseDateTime([]byte(s), loc)
			if !ok {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil || n < 0 {
					return false, perrS(p.name, "a time YYYY-MM-DD HH:MM:SS or Unix seconds", s)
				}
				t = time.Unix(n, 0).In(loc)
			}
			*p.dst = t
		}
		if !j.Start.IsZero() && !j.End.IsZero() && j.End.Before(j.Start) {
			return false, perrS("end_time", "a time not before start_time", rec[r.col["end_time"]])
		}
		return true, nil
	}
	return r, nil
}
