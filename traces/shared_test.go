package traces

import (
	"path/filepath"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// ls6Path returns the shared LS6 trace, or skips.
func ls6Path(t testing.TB) string {
	return filepath.Join(testenv.SharedTraces(t), "tacc-ls6-a100", "ls6-a100-until-2023-03-01.log.gz")
}

func TestSharedLS6(t *testing.T) {
	jobs, r := readAll(t, ls6Path(t), Options{})
	if r.Format() != FormatLS6 || r.Skipped() != 0 {
		t.Fatalf("format %q skipped %d", r.Format(), r.Skipped())
	}
	if len(jobs) != 17975 {
		t.Fatalf("%d jobs, want 17,975 (README)", len(jobs))
	}
	users := map[string]bool{}
	for _, j := range jobs {
		users[j.User] = true
		if j.GPUs != 3*j.Nodes {
			t.Fatalf("job %s: %d GPUs for %d nodes", j.ID, j.GPUs, j.Nodes)
		}
	}
	// README: first row is job 478729 submitted 2022-10-05T11:52:48 US Central.
	if jobs[0].ID != "478729" || jobs[0].Submit.In(centralTime).Format("2006-01-02T15:04:05") != "2022-10-05T11:52:48" {
		t.Errorf("first job %+v", jobs[0])
	}
	// README: "Submits run 2022-10-05 to 2023-02-28".
	last := jobs[0].Submit
	for _, j := range jobs {
		if j.Submit.After(last) {
			last = j.Submit
		}
	}
	if got := last.In(centralTime).Format("2006-01-02"); got != "2023-02-28" {
		t.Errorf("last submit %s, want 2023-02-28", got)
	}
	if len(users) > 367 {
		t.Errorf("%d users; the full file has 367", len(users))
	}
}
