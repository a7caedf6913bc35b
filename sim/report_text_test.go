package sim

import (
	"strings"
	"testing"
	"time"
)

func TestReplayWriteText(t *testing.T) {
	t0 := time.Date(2023, 1, 2, 10, 0, 0, 0, time.UTC)
	rep := &Report{Jobs: 2, Skipped: 1, SimDays: 0.25, Excluded: map[string]int{}}
	res := []Result{{ID: "a", Submit: t0, Start: t0, End: t0.Add(time.Hour), State: "COMPLETED", Nodes: 2}}
	head := "replayed 2 jobs (1 skipped) over 0.2 simulated days on 4 nodes in 1.50 s\n"
	tests := []struct {
		name string
		r    Replay
		want string
	}{
		{"jobs", Replay{Nodes: 4, WallSec: 1.5, Fidelity: rep, Jobs: res},
			head + "id,submit,start,end,state,nodes\na,2023-01-02T10:00:00Z,2023-01-02T10:00:00Z,2023-01-02T11:00:00Z,COMPLETED,2\n"},
		{"jobs to a file", Replay{Nodes: 4, WallSec: 1.5, Fidelity: rep, JobsFile: true}, head},
		{"no jobs", Replay{Nodes: 4, WallSec: 1.5, Fidelity: rep}, head + "id,submit,start,end,state,nodes\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		if err := tt.r.WriteText(&b); err != nil || b.String() != tt.want {
			t.Errorf("%s: %v\n%q\nwant\n%q", tt.name, err, b.String(), tt.want)
		}
	}
	var b strings.Builder
	r := Replay{Nodes: 4, WallSec: 1.5, Fidelity: rep, Report: rep}
	if err := r.WriteText(&b); err != nil || !strings.HasPrefix(b.String(), head+"excluded from comparison: map[]\n") {
		t.Errorf("with report: %v\n%s", err, b.String())
	}
}
