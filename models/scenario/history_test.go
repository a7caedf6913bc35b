package scenario

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/traces"
)

// What sacct showed at 12:00 with a 2-hour window (since 10:00), worked
// out by hand: a ended before the window; b ended inside it; f started at
// its first instant and failed; c runs past 12:00, so it shows running
// without an end; d starts after 12:00 and e never started.
func TestRecordedHistory(t *testing.T) {
	day := time.Date(2023, 2, 1, 0, 0, 0, 0, time.UTC)
	h := func(x float64) time.Time { return day.Add(time.Duration(x * float64(time.Hour))) }
	jobs := []traces.Job{
		{ID: "c", User: "u2", Submit: h(10.5), Start: h(11), End: h(13), TimeLimit: 4 * time.Hour, Nodes: 2, GPUs: 6, State: traces.StateCompleted},
		{ID: "a", User: "u1", Submit: h(7), Start: h(8), End: h(9), TimeLimit: time.Hour, Nodes: 1, State: traces.StateCompleted},
		{ID: "b", User: "u1", Account: "acct", Submit: h(8.5), Start: h(9), End: h(10.5), TimeLimit: 2 * time.Hour, Nodes: 1, State: traces.StateTimeout},
		{ID: "d", User: "u1", Submit: h(12), Start: h(12.5), End: h(13), Nodes: 1},
		{ID: "e", User: "u1", Submit: h(11)},
		{ID: "f", User: "u3", Submit: h(9.75), Start: h(10), End: h(11), Nodes: 1, State: traces.StateFailed, ExitCode: 2},
	}
	got := NewRecordedHistory(jobs).At(h(12), h(10))
	want := []provisioner.Job{
		{ID: "b", User: "u1", Account: "acct", Submit: h(8.5), Start: h(9), End: h(10.5), TimeLimit: 2 * time.Hour, Nodes: 1, State: provisioner.StateTimeout},
		{ID: "f", User: "u3", Account: "u3", Submit: h(9.75), Start: h(10), End: h(11), Nodes: 1, State: provisioner.StateFailed, ExitCode: 2},
		{ID: "c", User: "u2", Account: "u2", Submit: h(10.5), Start: h(11), TimeLimit: 4 * time.Hour, Nodes: 2, GPUs: 6, State: provisioner.StateRunning},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d jobs %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.User != w.User || g.Account != w.Account || !g.Submit.Equal(w.Submit) || !g.Start.Equal(w.Start) || !g.End.Equal(w.End) ||
			g.TimeLimit != w.TimeLimit || g.Nodes != w.Nodes || g.GPUs != w.GPUs || g.State != w.State || g.ExitCode != w.ExitCode {
			t.Errorf("job %d: got %+v, want %+v", i, g, w)
		}
	}
	if n := len(NewRecordedHistory(jobs).At(h(8.5), h(6.5))); n != 1 {
		t.Errorf("at 08:30: %d jobs, want a alone (running)", n)
	}
}
