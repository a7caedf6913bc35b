package slurm

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/mirage-gpu/mirage/provisioner"
)

// parallelMin is the size of a job list from which it is read by two
// goroutines. Tests choose through the parsers' minParallel: math.MaxInt
// never splits, 0 always splits, and splitInline (negative) always splits but
// reads the second half on the calling goroutine first, which makes the
// result independent of scheduling (the fuzz targets need that).
const parallelMin = 8 << 20

// splitInline forces the split without a second goroutine (tests).
const splitInline = -1

// readJobList reads a JSON array of job records into jobs: read fills a
// record from the scanner, conv turns it into a Job (expanding host lists
// against hb).
//
// Large lists are split in two: a second goroutine starts at a guessed
// element boundary in the middle (the first element's first key, preceded
// by '{' and ','), while this one parses from the start. The guess is used
// only if this goroutine's own parse reaches exactly that boundary and the
// second one finished cleanly; otherwise parsing simply continues here, so
// the result is always what a sequential parse gives (the fuzz targets
// compare both).
func readJobList[R any](s *scanner, hb *hostBudget, minParallel int, read func(*scanner, *R) error,
	conv func(*R, *hostBudget) (provisioner.Job, error)) ([]provisioner.Job, []Skipped, error) {
	var out jobChunks
	var rec R
	one := func(s *scanner, out *jobChunks, hb *hostBudget) error {
		if ok, err := readOrSkip(s, &rec, read, &out.skipped); !ok {
			return err
		}
		var err error
		*out.next(), err = conv(&rec, hb)
		return err
	}
	if s.null() {
		return out.all(), out.skipped, nil
	}
	if err := s.expect('['); err != nil {
		return nil, nil, err
	}
	if s.peek() == ']' {
		s.i++
		return out.all(), out.skipped, nil
	}
	split := -1
	var second *halfResult
	switch {
	case minParallel == splitInline:
		split, second = startSecondHalf(s, read, conv, true)
	case len(s.b)-s.i >= minParallel && runtime.GOMAXPROCS(0) > 1:
		split, second = startSecondHalf(s, read, conv, false)
	}
	for {
		s.ws()
		if second != nil && s.i > split {
			second.stop.Store(true) // passed the guess without landing on it
			second = nil
		}
		if err := one(s, &out, hb); err != nil {
			if second != nil {
				second.stop.Store(true)
			}
			return nil, nil, err
		}
		switch s.peek() {
		case ',':
			if second != nil && s.i == split {
				<-second.done
				if second.err == nil && hb.left-(maxDocHosts-second.hb.left) >= 0 {
					hb.left -= maxDocHosts - second.hb.left
					out.appendAll(&second.out)
					s.i = second.end
					return out.all(), out.skipped, nil
				}
				second = nil // the second half failed: read it here, so errors come out as they would in order
			}
			s.i++
		case ']':
			s.i++
			if second != nil {
				second.stop.Store(true)
			}
			return out.all(), out.skipped, nil
		default:
			if second != nil {
				second.stop.Store(true)
			}
			return nil, nil, s.errorf("want ',' or ']' in array")
		}
	}
}

// halfResult is what the second goroutine produced.
type halfResult struct {
	out  jobChunks
	hb   *hostBudget
	end  int // offset just after the closing ']'
	err  error
	stop atomic.Bool
	done chan struct{}
}

// startSecondHalf guesses an element boundary in the middle of the list that
// starts at s.i and parses from there to the end in a new goroutine. It
// returns the offset of the ',' before the guessed element (or -1).
func startSecondHalf[R any](s *scanner, read func(*scanner, *R) error,
	conv func(*R, *hostBudget) (provisioner.Job, error), inline bool) (int, *halfResult) {
	// The first element's first key, e.g. "account".
	probe := &scanner{b: s.b, i: s.i}
	if probe.peek() != '{' {
		return -1, nil
	}
	probe.i++
	if probe.peek() != '"' {
		return -1, nil
	}
	keyStart := probe.i
	if _, _, err := probe.rawString(); err != nil {
		return -1, nil
	}
	key := s.b[keyStart:probe.i]
	mid := s.i + (len(s.b)-s.i)/2
	at := bytes.Index(s.b[mid:], key)
	if at < 0 {
		return -1, nil
	}
	at += mid
	// Walk back: white space, '{', white space, ','.
	back := func(i int) int {
		for i >= 0 && (s.b[i] == ' ' || s.b[i] == '\n' || s.b[i] == '\t' || s.b[i] == '\r') {
			i--
		}
		return i
	}
	brace := back(at - 1)
	if brace < 0 || s.b[brace] != '{' {
		return -1, nil
	}
	comma := back(brace - 1)
	if comma < 0 || s.b[comma] != ',' {
		return -1, nil
	}
	h := &halfResult{hb: newHostBudget(), done: make(chan struct{})}
	work := func() {
		defer close(h.done)
		t := &scanner{b: s.b, i: brace}
		var rec R
		for !h.stop.Load() {
			if ok, err := readOrSkip(t, &rec, read, &h.out.skipped); !ok {
				if err != nil {
					h.err = err
					return
				}
				if !h.sep(t) {
					return
				}
				continue
			}
			j, err := conv(&rec, h.hb)
			if err != nil {
				h.err = err
				return
			}
			*h.out.next() = j
			if !h.sep(t) {
				return
			}
		}
		h.err = errStopped
	}
	if inline {
		work()
	} else {
		go work()
	}
	return comma, h
}

// sep reads the separator after an element of the second half: true after
// a ',' (more to read), false at the closing ']' (end set) or on an error
// (err set).
func (h *halfResult) sep(t *scanner) bool {
	switch t.peek() {
	case ',':
		t.i++
		t.ws()
		return true
	case ']':
		h.end = t.i + 1
	default:
		h.err = t.errorf("want ',' or ']' in array")
	}
	return false
}

// readOrSkip reads one element of a job list into rec. An element that
// does not read as a job record (a field of an unexpected type, say after
// a Slurm upgrade) but is well-formed JSON is skipped whole and noted in
// skipped: one odd record never costs the others, unless it carries a mirage
// tag (it may be one of the user's chain jobs, which the engine must see).
// It returns whether rec
// holds a record, and the read's error when the element is not even
// well-formed JSON (the document cannot be read on).
func readOrSkip[R any](s *scanner, rec *R, read func(*scanner, *R) error, skipped *[]Skipped) (bool, error) {
	start := s.i
	err := read(s, rec)
	if err == nil {
		return true, nil
	}
	s.i = start
	if s.skip() != nil {
		return false, err
	}
	if bytes.Contains(s.b[start:s.i], []byte(provisioner.TagPrefix)) {
		// Possibly one of the user's own chain jobs: deciding without it
		// could submit its segment again. Fail the read, as before.
		return false, err
	}
	*skipped = append(*skipped, Skipped{Cmd: "json", ID: rawJobID(s.b[start:s.i]), Err: err})
	return false, nil
}

// rawJobID finds the first "job_id" number of a JSON object's bytes, for
// naming a skipped record ("" when there is none).
func rawJobID(b []byte) string {
	i := bytes.Index(b, []byte(`"job_id"`))
	if i < 0 {
		return ""
	}
	b = bytes.TrimLeft(b[i+len(`"job_id"`):], " \t\r\n:")
	n := 0
	for n < len(b) && n < 20 && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return string(b[:n])
}

// errStopped marks a second half that was abandoned.
var errStopped = errors.New("second half abandoned")

// parseJobsDoc reads the "jobs" list of a squeue or sacct --json document
// (cmd names it in errors) with readJobList: the jobs, the elements left
// out, and the document's version. A document without the list, or none of
// whose elements read (a format this reader does not know, not one odd
// record), is an error.
func parseJobsDoc[R any](cmd string, b []byte, minParallel int, read func(*scanner, *R) error,
	conv func(*R, *hostBudget) (provisioner.Job, error)) ([]provisioner.Job, []Skipped, Version, error) {
	var out []provisioner.Job
	var skipped []Skipped
	found := false
	v, err := parseDoc(cmd, b, func(s *scanner, key []byte) error {
		if string(key) != "jobs" {
			return s.skip()
		}
		found = true
		var err error
		out, skipped, err = readJobList(s, newHostBudget(), minParallel, read, conv)
		return err
	})
	switch {
	case err != nil:
		return nil, nil, v, err
	case !found:
		return nil, nil, v, missingField(cmd, "jobs", v)
	case len(out) == 0 && len(skipped) > 0:
		return nil, nil, v, fmt.Errorf("%s: none of its %d jobs reads: %w", cmd, len(skipped), skipped[0].Err)
	}
	for i := range skipped {
		skipped[i].Cmd = cmd
	}
	return out, skipped, v, nil
}
