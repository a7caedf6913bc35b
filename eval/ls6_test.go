package eval

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/traces"
)

// sharedLS6 reads the shared LS6 file for the LS6 result runs (skipping
// the test when it cannot be read) and returns its path, its jobs and the
// per-day chain table cache `mirage eval walk-forward` keeps ("" when the
// user has no cache directory).
func sharedLS6(t *testing.T) (path string, jobs []traces.Job, cache string) {
	t.Helper()
	path = testenv.SharedTrace(t, testenv.LS6)
	jobs, err := traces.ReadFile(path, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "mirage", "datasets")
	}
	return path, jobs, cache
}

// ls6Months are the scored periods of the LS6 result runs: December,
// January and February 2023 (US Central), February ending on lastFeb.
func ls6Months(lastFeb int) []time.Time {
	chi, _ := time.LoadLocation("America/Chicago")
	return []time.Time{time.Date(2022, 12, 1, 0, 0, 0, 0, chi), time.Date(2023, 1, 1, 0, 0, 0, 0, chi),
		time.Date(2023, 2, 1, 0, 0, 0, 0, chi), time.Date(2023, 2, lastFeb, 0, 0, 0, 0, chi)}
}
