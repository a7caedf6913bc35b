package sim

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/traces"
)

// loadLS6 reads the shared LS6 cut, or skips.
func loadLS6(tb testing.TB) []traces.Job {
	tb.Helper()
	dir := testenv.SharedTraces(tb)
	r, err := traces.Open(filepath.Join(dir, "tacc-ls6-a100", "ls6-a100-until-2023-03-01.log.gz"), traces.Options{})
	if err != nil {
		tb.Skipf("LS6 trace unavailable: %v", err)
	}
	defer r.Close()
	var jobs []traces.Job
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func TestFidelityLS6(t *testing.T) {
	jobs := loadLS6(t)
	rep, _, err := Fidelity(jobs, LS6(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Jobs != 17975 {
		t.Errorf("replayed %d jobs, want 17975", rep.Jobs)
	}
	for _, s := range rep.Stats {
		t.Logf("%+v", s)
	}
	// the calibration target of issue 3 (figures in the README)
	if ks := rep.Stats[0].KS; ks > 0.15 {
		t.Errorf("KS distance %.3f > 0.15", ks)
	}
	t.Logf("excluded %v, days %.1f", rep.Excluded, rep.SimDays)
}
