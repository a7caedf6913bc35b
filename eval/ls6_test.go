package eval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/traces"
)

// sharedLS6 reads the shared LS6 file for the LS6 result runs (skipping
// the test when it cannot be read) and returns its path, its jobs and the
// per-day chain table cache `mirage eval walk-forward` keeps ("" when the
// user has no cache directory).
func sharedLS6(t *testing.T) (path string, jobs []traces.Job, cache string) {
	t.Helper()
	path = filepath.Join(testenv.SharedTraces(t), "tacc-ls6-a100", "ls6-a100-until-2023-03-01.log.gz")
	jobs, err := traces.ReadFile(path, traces.Options{})
	if err != nil {
		t.Skip(err)
	}
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "mirage", "datasets")
	}
	return path, jobs, cache
}
