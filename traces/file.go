package traces

import (
	"errors"
	"fmt"
)

// ErrNoJobs is matched by ReadFile's error for a trace without a job.
var ErrNoJobs = errors.New("no jobs")

// ReadFile reads every job of a trace file into memory (Open and All): a
// trace without a job is an error wrapping ErrNoJobs, "PATH: no jobs".
func ReadFile(path string, opts Options) ([]Job, error) {
	jobs, _, err := ReadFileSkipped(path, opts)
	return jobs, err
}

// ReadFileSkipped is ReadFile that also returns how many malformed rows it
// skipped (opts.SkipBad).
func ReadFileSkipped(path string, opts Options) ([]Job, int, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	var jobs []Job
	for j, err := range All(r) {
		if err != nil {
			return nil, 0, err
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, 0, fmt.Errorf("%s: %w", path, ErrNoJobs)
	}
	return jobs, r.Skipped(), nil
}
