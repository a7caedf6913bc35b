package traces

import (
	"bytes"
	"time"
)

// SWF (Standard Workload Format, Parallel Workloads Archive): ';' lines are
// header comments ("; UnixStartTime: N" anchors the relative times, else
// Options.Epoch); each job line has 18 whitespace-separated fields, -1 for
// unknown: 1 job number, 2 submit (s from start), 3 wait (s), 4 run time (s),
// 5 allocated processors, 6 average CPU time, 7 used memory, 8 requested
// processors, 9 requested time (s), 10 requested memory, 11 status (1
// completed, 0 failed, 5 cancelled), 12 user, 13 group, 14 executable,
// 15 queue, 16 partition, 17 preceding job, 18 think time.
//
// Mapping: Submit = epoch + submit; Start = Submit + wait when wait ≥ 0
// (else Start = Submit, since SWF logs without waits give start times as
// submit times); End = Start + run when run ≥ 0; Nodes = allocated (or
// requested) processors, as SWF counts nodes/processors; GPUs 0;
// TimeLimit = requested time; User = user id; Account = group id;
// Partition = queue number.
const swfFields = 18

var swfNames = [swfFields]string{"job", "submit", "wait", "run", "procs", "avgcpu", "mem", "reqprocs", "reqtime", "reqmem", "status", "user", "group", "exe", "queue", "partition", "preceding", "think"}

type swfReader struct {
	rowReader
	epoch time.Time
	ids   interner
	f     [swfFields]int64
}

func newSWFReader(lr lineReader, epoch time.Time) (Reader, error) {
	r := &swfReader{epoch: epoch, ids: interner{}}
	r.rowReader = rowReader{lineReader: lr, format: FormatSWF, parse: r.parseLine}
	return r, nil
}

var unixStartTime = []byte("UnixStartTime:")

func (r *swfReader) parseLine(line []byte, j *Job) (bool, *ParseError) {
	t := bytes.TrimLeft(line, " \t")
	if len(t) == 0 {
		return false, nil
	}
	if t[0] == ';' {
		if i := bytes.Index(t, unixStartTime); i >= 0 {
			v := bytes.TrimSpace(t[i+len(unixStartTime):])
			n, ok := atoi(v)
			if !ok {
				return false, perr("UnixStartTime", "seconds since 1970", v)
			}
			r.epoch = time.Unix(n, 0).UTC()
		}
		return false, nil
	}
	n := 0
	var raw [swfFields][]byte
	for len(t) > 0 {
		i := 0
		for i < len(t) && t[i] != ' ' && t[i] != '\t' {
			i++
		}
		if n < swfFields {
			raw[n] = t[:i]
		}
		n++
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		t = t[i:]
	}
	if n != swfFields {
		return false, perr("row", "18 whitespace-separated fields", []byte(itoa(n)+" fields"))
	}
	for i := range swfFields {
		v, ok := atoi(raw[i])
		if !ok {
			// some archive logs write fractional averages (field 6); accept them
			if i == 5 || i == 6 || i == 9 {
				if isDecimal(raw[i]) {
					v = -1
					ok = true
				}
			}
			if !ok {
				return false, perr(swfNames[i], "an integer (-1 = unknown)", raw[i])
			}
		}
		r.f[i] = v
	}
	f := &r.f
	if f[0] < 0 {
		return false, perr("job", "a job number", raw[0])
	}
	j.ID = string(raw[0])
	if f[1] >= 0 {
		j.Submit = r.epoch.Add(time.Duration(f[1]) * time.Second)
		j.Start = j.Submit
		if f[2] >= 0 {
			j.Start = j.Submit.Add(time.Duration(f[2]) * time.Second)
		}
		if f[3] >= 0 {
			j.End = j.Start.Add(time.Duration(f[3]) * time.Second)
		}
	}
	switch {
	case f[4] > 0:
		j.Nodes = int(f[4])
	case f[7] > 0:
		j.Nodes = int(f[7])
	}
	if f[8] > 0 {
		j.TimeLimit = time.Duration(f[8]) * time.Second
	}
	switch f[10] {
	case 1:
		j.State = StateCompleted
	case 0:
		j.State = StateFailed
	case 5:
		j.State = StateCancelled
	}
	if j.HitLimit() && j.State != StateCancelled {
		j.State = StateTimeout
	}
	if f[11] >= 0 {
		j.User = r.ids.get(raw[11])
	}
	if f[12] >= 0 {
		j.Account = r.ids.get(raw[12])
	}
	if f[14] >= 0 {
		j.Partition = r.ids.get(raw[14])
	}
	return true, nil
}

func isDecimal(b []byte) bool {
	dot := false
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && !dot:
			dot = true
		case c == '-' && i == 0:
		default:
			return false
		}
	}
	return len(b) > 0
}
