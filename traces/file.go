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
