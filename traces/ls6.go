package traces

import (
	"bytes"
	"time"
)

// LS6 export layout (the TACC Lonestar6 A100 trace of the Mirage paper):
//
//	line 1: count of the lines that follow (header + dash row + rows); informational
//	line 2: fixed-width header "JobID JobName UID Start Submit End Priority TimelimitR ExitCode NNodes"
//	line 3: a row of dashes
//	then one TAB-separated row per job with exactly 10 fields:
//	JobID, JobName, UID, Start, Submit, End, Priority, TimelimitRaw (minutes), ExitCode (code:signal), NNodes
//
// Start comes before Submit. Times are local US Central wall time without a
// zone (read in America/Chicago unless Options.Location says otherwise; in
// the repeated hour when DST ends Go picks one of the two instants). GPUs are
// 3 × NNodes (3 A100 per LS6 GPU node; the queue allocated whole nodes);
// GPUType is "a100", Partition "gpu-a100". The source has no State column:
// State is TIMEOUT when the job ran to its limit, FAILED for a non-zero exit
// code or signal, COMPLETED otherwise. A row with any other field count (the
// full public file has one 11-field row) is malformed.
const (
	ls6Fields      = 10
	ls6GPUsPerNode = 3
)

type ls6Reader struct {
	rowReader
	loc    *time.Location
	header int // header lines consumed
	users  interner
	names  interner
	f      [ls6Fields][]byte
}

func newLS6Reader(lr lineReader, loc *time.Location) (Reader, error) {
	r := &ls6Reader{loc: loc, users: interner{}, names: interner{}}
	r.rowReader = rowReader{lineReader: lr, format: FormatLS6, parse: r.parseLine}
	return r, nil
}

func (r *ls6Reader) parseLine(line []byte, j *Job) (bool, *ParseError) {
	if r.header < 3 {
		r.header++
		switch r.header {
		case 1:
			if !isDigits(bytes.TrimSpace(line)) {
				return false, fatal(perr("count", "the line count (digits) on line 1", line))
			}
		case 2:
			if !bytes.Contains(line, []byte("JobID")) {
				return false, fatal(perr("header", "the fixed-width header naming JobID", line))
			}
		case 3:
			if len(bytes.Trim(line, "- ")) != 0 {
				return false, fatal(perr("header", "a row of dashes", line))
			}
		}
		return false, nil
	}
	f := r.f[:]
	if n := splitInto(f, line, '\t'); n != ls6Fields {
		return false, perr("row", "10 tab-separated fields", []byte(itoa(n)+" fields"))
	}
	if len(f[0]) == 0 {
		return false, perr("JobID", "a job id", f[0])
	}
	var ok bool
	if j.Start, ok = parseDateTime(f[3], r.loc); !ok {
		return false, perr("Start", "time YYYY-MM-DDTHH:MM:SS", f[3])
	}
	if j.Submit, ok = parseDateTime(f[4], r.loc); !ok {
		return false, perr("Submit", "time YYYY-MM-DDTHH:MM:SS", f[4])
	}
	if j.End, ok = parseDateTime(f[5], r.loc); !ok {
		return false, perr("End", "time YYYY-MM-DDTHH:MM:SS", f[5])
	}
	if bytes.Compare(f[5], f[3]) < 0 { // same fixed layout: byte order is wall-clock order
		return false, perr("End", "a time not before Start "+string(f[3]), f[5])
	}
	prio, ok := atoi(f[6])
	if !ok {
		return false, perr("Priority", "an integer", f[6])
	}
	limit, ok := atoi(f[7])
	if !ok || limit < 0 {
		return false, perr("TimelimitRaw", "minutes (a non-negative integer)", f[7])
	}
	code, sig, ok := parseExitCode(f[8])
	if !ok {
		return false, perr("ExitCode", "code:signal", f[8])
	}
	nodes, ok := atoi(f[9])
	if !ok || nodes < 0 {
		return false, perr("NNodes", "a non-negative integer", f[9])
	}
	j.ID = string(f[0])
	j.Name = r.names.get(f[1])
	j.User = r.users.get(f[2])
	j.Partition = "gpu-a100"
	j.GPUType = "a100"
	j.Priority = prio
	j.TimeLimit = time.Duration(limit) * time.Minute
	j.ExitCode, j.Signal = code, sig
	j.Nodes = int(nodes)
	j.GPUs = ls6GPUsPerNode * int(nodes)
	switch {
	case j.HitLimit():
		j.State = StateTimeout
	case code != 0 || sig != 0:
		j.State = StateFailed
	default:
		j.State = StateCompleted
	}
	return true, nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
