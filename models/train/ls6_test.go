package train

import (
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/traces"
)

// ls6Jobs reads the shared LS6 file (testenv.SharedTrace: skipped without
// it outside CI) and returns its path and jobs.
func ls6Jobs(tb testing.TB) (string, []traces.Job) {
	tb.Helper()
	path := testenv.SharedTrace(tb, testenv.LS6)
	r, err := traces.Open(path, traces.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var jobs []traces.Job
	for j, err := range traces.All(r) {
		if err != nil {
			tb.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return path, jobs
}
