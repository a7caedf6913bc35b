package traces

import (
	"bytes"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// ParsableFields is the sacct field list mirage asks for and documents for
// FormatParsable:
//
//	sacct --allocations --parsable2 --noconvert --format=$(ParsableFields) -S ... -E ...
//
// The reader parses by the names in the header row, so any subset in any
// order works; only JobID is required. Also understood: JobIDRaw, UID,
// Timelimit (D-HH:MM:SS), AllocNodes, ReqTRES, AllocCPUS, NCPUS.
const ParsableFields = "JobID,JobName,User,Account,Partition,Submit,Eligible,Start,End,TimelimitRaw,NNodes,AllocTRES,State,ExitCode,Priority"

// Rows whose JobID contains a '.' are job steps (123.batch, 123.0) and are
// skipped; times "Unknown"/"None"/empty are zero; "CANCELLED by 123" is
// CANCELLED; GPUs and GPUType come from AllocTRES (falling back to ReqTRES)
// entries "gres/gpu=N" and "gres/gpu:TYPE=N". Times are read in
// Options.Location (default UTC): sacct prints the slurmdbd host's local time.
type parsableReader struct {
	rowReader
	loc    *time.Location
	col    map[string]int
	fields [][]byte
	users  interner
}

func newParsableReader(lr lineReader, loc *time.Location) (Reader, error) {
	r := &parsableReader{loc: loc, users: interner{}}
	r.rowReader = rowReader{lineReader: lr, format: FormatParsable, parse: r.parseLine}
	return r, nil
}

func (r *parsableReader) parseLine(line []byte, j *Job) (bool, *ParseError) {
	if r.col == nil {
		names := strings.Split(string(line), "|")
		r.col = make(map[string]int, len(names))
		for i, n := range names {
			r.col[strings.TrimSpace(n)] = i
		}
		if _, ok := r.col["JobID"]; !ok {
			if _, ok := r.col["JobIDRaw"]; !ok {
				r.col = nil
				return false, fatal(perr("header", "a '|'-separated header naming JobID", line))
			}
		}
		r.fields = make([][]byte, len(names))
		return false, nil
	}
	if n := splitInto(r.fields, line, '|'); n != len(r.fields) {
		return false, perr("row", itoa(len(r.fields))+" '|'-separated fields (as in the header)", []byte(itoa(n)+" fields"))
	}
	get := func(name string) ([]byte, bool) {
		i, ok := r.col[name]
		if !ok {
			return nil, false
		}
		return r.fields[i], true
	}
	id, ok := get("JobID")
	if !ok {
		id, _ = get("JobIDRaw")
	}
	if len(id) == 0 {
		return false, perr("JobID", "a job id", id)
	}
	if bytes.IndexByte(id, '.') >= 0 {
		return false, nil // job step
	}
	j.ID = string(id)
	if b, ok := get("JobName"); ok {
		j.Name = string(b)
	}
	if b, ok := get("User"); ok && len(b) > 0 {
		j.User = r.users.get(b)
	} else if b, ok := get("UID"); ok {
		j.User = r.users.get(b)
	}
	if b, ok := get("Account"); ok {
		j.Account = r.users.get(b)
	}
	if b, ok := get("Partition"); ok {
		j.Partition = r.users.get(b)
	}
	for _, tf := range []struct {
		name string
		dst  *time.Time
	}{{"Submit", &j.Submit}, {"Eligible", &j.Eligible}, {"Start", &j.Start}, {"End", &j.End}} {
		b, ok := get(tf.name)
		if !ok || isNoTime(b) {
			continue
		}
		t, ok := parseDateTime(b, r.loc)
		if !ok {
			return false, perr(tf.name, "time YYYY-MM-DDTHH:MM:SS, Unknown or None", b)
		}
		*tf.dst = t
	}
	if b, ok := get("TimelimitRaw"); ok && len(b) > 0 {
		d, ok := timeLimit(b)
		if !ok {
			return false, perr("TimelimitRaw", "minutes, UNLIMITED or Partition_Limit", b)
		}
		j.TimeLimit = d
	} else if b, ok := get("Timelimit"); ok && len(b) > 0 {
		d, ok := timeLimit(b)
		if !ok {
			return false, perr("Timelimit", "[D-]HH:MM:SS, minutes, UNLIMITED or Partition_Limit", b)
		}
		j.TimeLimit = d
	}
	for _, name := range []string{"NNodes", "AllocNodes"} {
		if b, ok := get(name); ok && len(b) > 0 {
			n, ok := atoi(b)
			if !ok || n < 0 {
				return false, perr(name, "a non-negative integer", b)
			}
			j.Nodes = int(n)
			break
		}
	}
	for _, name := range []string{"AllocCPUS", "NCPUS"} {
		if b, ok := get(name); ok && len(b) > 0 {
			n, ok := atoi(b)
			if !ok || n < 0 {
				return false, perr(name, "a non-negative integer", b)
			}
			j.CPUs = int(n)
			break
		}
	}
	for _, name := range []string{"AllocTRES", "ReqTRES"} {
		if b, ok := get(name); ok && len(b) > 0 {
			gpus, typ, err := slurmfmt.GPUsFromTRES(string(b))
			if err != nil {
				return false, perr(name, "TRES list like billing=3,cpu=128,gres/gpu=3,node=1", b)
			}
			j.GPUs, j.GPUType = gpus, typ
			// a started job's AllocTRES is authoritative, even without GPUs
			if gpus > 0 || (name == "AllocTRES" && !j.Start.IsZero()) {
				break
			}
		}
	}
	if b, ok := get("State"); ok && len(b) > 0 {
		if i := bytes.IndexByte(b, ' '); i >= 0 {
			b = b[:i]
		}
		j.State = State(r.users.get(b))
	}
	if b, ok := get("ExitCode"); ok && len(b) > 0 {
		c, s, ok := parseExitCode(b)
		if !ok {
			return false, perr("ExitCode", "code:signal", b)
		}
		j.ExitCode, j.Signal = c, s
	}
	if b, ok := get("Priority"); ok && len(b) > 0 {
		p, ok := atoi(b)
		if !ok {
			return false, perr("Priority", "an integer", b)
		}
		j.Priority = p
	}
	return true, nil
}

func isNoTime(b []byte) bool {
	switch string(b) {
	case "", "Unknown", "None", "N/A":
		return true
	}
	return false
}

// timeLimit reads a sacct Timelimit or TimelimitRaw field. Job.TimeLimit
// is 0 when no limit is known, so every word of slurmfmt's table
// (UNLIMITED, Partition_Limit, N/A, ...) gives 0: an unlimited job and one
// that ran under its partition's limit both have no limit of their own in
// the record.
func timeLimit(b []byte) (time.Duration, bool) {
	d, err := slurmfmt.ParseDuration(string(b))
	if err != nil {
		return 0, false
	}
	switch d.Kind {
	case slurmfmt.Set:
		return d.Value, true
	case slurmfmt.Unlimited, slurmfmt.PartitionLimit, slurmfmt.NotSet:
		return 0, true
	}
	return 0, false
}
