package traces

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoJobs is matched by ReadFile's error for a trace without a job.
var ErrNoJobs = errors.New("no jobs")

// ReadFile reads every job of a trace file into memory (Open and All): a
// trace without a job is an error wrapping ErrNoJobs, "PATH: no jobs".
func ReadFile(path string, opts Options) ([]Job, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var jobs []Job
	for j, err := range All(r) {
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNoJobs)
	}
	return jobs, nil
}

// ParseTime parses a trace time given by a person: RFC 3339, or a date,
// "YYYY-MM-DDTHH:MM[:SS]" or "YYYY-MM-DD HH:MM" in loc. "" is the zero
// time. Times before 1970 are refused (trace times are Unix times). The
// error quotes s and says what is wanted, for the caller to prefix with
// what s was, e.g. a flag's name.
func ParseTime(s string, loc *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04"} {
		if err == nil {
			break
		}
		t, err = time.ParseInLocation(layout, s, loc)
	}
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("%q: want RFC 3339 or YYYY-MM-DD[THH:MM[:SS]] (in the trace's zone)", s)
	case t.Year() < 1970:
		return time.Time{}, fmt.Errorf("%q: want a time from 1970 on (trace times are Unix times)", s)
	}
	return t, nil
}
