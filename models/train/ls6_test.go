package train

import (
	"path/filepath"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/traces"
)

// ls6Jobs reads the shared LS6 file (skipping the test or benchmark when
// it cannot be opened) and returns its path and jobs.
func ls6Jobs(tb testing.TB) (string, []traces.Job) {
	tb.Helper()
	path := filepath.Join(testenv.SharedTraces(tb), "tacc-ls6-a100", "ls6-a100-until-2023-03-01.log.gz")
	r, err := traces.Open(path, traces.Options{})
	if err != nil {
		tb.Skip(err)
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
