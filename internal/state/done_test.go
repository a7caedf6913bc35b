package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner"
)

// TestMarkDone: the marker is a private file in a private directory of the
// state directory, named after its chain and segment; a chain id that
// could name another path is refused.
func TestMarkDone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l := Location{Dir: dir}
	path, err := l.MarkDone(DoneMark{Chain: "c-20261123-ab12cd", Segment: 3, Job: "46", Time: t0})
	if err != nil || path != filepath.Join(dir, DoneDir, "c-20261123-ab12cd.3.done") {
		t.Fatalf("MarkDone: %q, %v", path, err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, DoneDir): 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %04o", p, fi.Mode().Perm(), err, want)
		}
	}
	if m, err := readMark(path); err != nil || m != (DoneMark{Chain: "c-20261123-ab12cd", Segment: 3, Job: "46", Time: t0}) {
		t.Errorf("read back: %+v, %v", m, err)
	}
	for _, bad := range []DoneMark{{Chain: "../x", Segment: 1}, {Chain: "a/b", Segment: 1}, {Chain: "", Segment: 1}, {Chain: "c-1", Segment: -1}} {
		if p, err := l.MarkDone(bad); err == nil {
			t.Errorf("MarkDone(%+v) wrote %s", bad, p)
		}
	}
	// A marker directory others may write is refused, not written into.
	if err := os.Chmod(filepath.Join(dir, DoneDir), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := l.MarkDone(DoneMark{Chain: "c-1", Segment: 0}); !errors.Is(err, ErrUnsafe) {
		t.Errorf("into a directory others may write: %v, want ErrUnsafe", err)
	}
}

// TestIngestDone: each marker marks the segment it names and goes; a
// marker that names what the database does not hold yet stays; one of an
// ended chain goes; unreadable ones stay and are reported.
//
//	chain c-1 (active): 0.0 job 11 TIMEOUT, 1.0 job 12 FAILED, 1.1 job 13 RUNNING
//	chain c-2 (done):   0.0 job 21 COMPLETED
//	markers:            c-1.1 job 13   → 1.1 marked (not 1.0), removed
//	                    c-1.0 no job   → 0.0 (its latest attempt) marked, removed
//	                    c-1.2 job 14   → no segment 2 stored yet: kept
//	                    c-9.0          → no chain c-9: kept
//	                    c-2.0          → c-2 has ended: removed, nothing marked
//	                    c-1.5 bad JSON, c-1.6 writable by others: kept, reported
func TestIngestDone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	c1, c2 := testChain(), testChain()
	c2.ID, c2.State = "c-2", provisioner.ChainDone
	for _, c := range []*provisioner.Chain{&c1, &c2} {
		if err := s.PutChain(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, sg := range []provisioner.Segment{
		{ChainID: "c-1", Index: 0, JobID: "11", State: provisioner.StateTimeout},
		{ChainID: "c-1", Index: 1, JobID: "12", State: provisioner.StateFailed},
		{ChainID: "c-1", Index: 1, Attempt: 1, JobID: "13", State: provisioner.StateRunning},
		{ChainID: "c-2", Index: 0, JobID: "21", State: provisioner.StateCompleted},
	} {
		if err := s.PutSegment(ctx, &sg); err != nil {
			t.Fatal(err)
		}
	}
	l := Location{Dir: dir}
	marks := filepath.Join(dir, DoneDir)
	for _, m := range []DoneMark{{Chain: "c-1", Segment: 1, Job: "13", Time: t0}, {Chain: "c-1", Segment: 0, Time: t0}, {Chain: "c-1", Segment: 2, Job: "14"},
		{Chain: "c-9", Segment: 0}, {Chain: "c-2", Segment: 0, Job: "21"}} {
		if _, err := l.MarkDone(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(marks, "c-1.5.done"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marks, "c-1.6.done"), []byte(`{"chain":"c-1","segment":6}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(marks, "c-1.6.done"), 0o666); err != nil {
		t.Fatal(err)
	}
	marked, problems, err := s.IngestDone(ctx)
	if err != nil || strings.Join(marked, ",") != "c-1" || len(problems) != 2 {
		t.Fatalf("IngestDone: chains marked %v, problems %v, %v; want c-1 and 2 problems", marked, problems, err)
	}
	for i, want := range []string{"c-1.5.done", "c-1.6.done"} {
		if !strings.Contains(problems[i].Error(), want) {
			t.Errorf("problem %d: %v, want it to name %s", i, problems[i], want)
		}
	}
	segs, _ := s.Segments(ctx, "c-1")
	var done []string
	for _, sg := range segs {
		if sg.Done {
			done = append(done, sg.JobID)
		}
	}
	if strings.Join(done, ",") != "11,13" {
		t.Errorf("segments marked done: jobs %v, want 11 and 13", done)
	}
	if segs, _ := s.Segments(ctx, "c-2"); segs[0].Done {
		t.Error("a segment of an ended chain was marked")
	}
	var left []string
	entries, _ := os.ReadDir(marks)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != "c-1.2.done c-1.5.done c-1.6.done c-9.0.done" {
		t.Errorf("markers left: %v", left)
	}
	evs, _ := s.Events(ctx, "c-1")
	// Markers are taken in the order of their names: c-1.0 before c-1.1.
	if len(evs) != 2 || evs[0].Kind != provisioner.EventWorkDone || evs[0].JobID != "11" || evs[1].JobID != "13" || evs[1].Attempt != 1 || !evs[1].Time.Equal(t0) {
		t.Errorf("events %+v, want two work-done events, of jobs 11 and 13 (attempt 1), at the markers' time", evs)
	}
	// Again: nothing new is taken; the kept markers stay.
	if marked, _, err := s.IngestDone(ctx); err != nil || len(marked) != 0 {
		t.Errorf("second IngestDone: chains marked %v, %v", marked, err)
	}
}
