package slurm

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestNoValTimes: Slurm 22.05 prints NO_VAL (4294967294) and INFINITE
// (4294967295) as plain numbers; as times they mean "none", not a date in
// 2106 (issue #17).
func TestNoValTimes(t *testing.T) {
	doc := readTestdata(t, "squeue-22.05.json")
	for _, sentinel := range []string{"4294967294", "4294967295"} {
		b := strings.ReplaceAll(doc, `"end_time": 1795414723`, `"end_time": `+sentinel)
		b = strings.ReplaceAll(b, `"submit_time": 1795414634`, `"submit_time": `+sentinel)
		if b == doc {
			t.Fatal("the recorded squeue output changed: update the replaced fields")
		}
		jobs, _, err := ParseSqueueJSON([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			for name, tm := range map[string]int{"submit": j.Submit.Year(), "end": j.End.Year(), "start": j.Start.Year(), "eligible": j.Eligible.Year()} {
				if tm >= 2100 {
					t.Errorf("squeue %s: job %s %s in %d", sentinel, j.ID, name, tm)
				}
			}
		}
	}
	sacct := readTestdata(t, "sacct-22.05.json")
	for _, sentinel := range []string{"4294967294", "4294967295"} {
		b := strings.ReplaceAll(sacct, `"end": 1795414723`, `"end": `+sentinel)
		if b == sacct {
			t.Fatal("the recorded sacct output changed: update the replaced field")
		}
		jobs, _, err := ParseSacctJSON([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.End.Year() >= 2100 {
				t.Errorf("sacct %s: job %s ends in %d", sentinel, j.ID, j.End.Year())
			}
		}
	}
}

// TestJobsAsksForAllStates: from Slurm 23.02 on, squeue --json applies the
// default state filter, so jobs that ended within MinJobAge are missing
// unless --states=all is given (issue #17).
func TestJobsAsksForAllStates(t *testing.T) {
	r := &fakeRunner{replies: map[string][]reply{"squeue": {{out: readTestdata(t, "squeue-23.11.json")}}}}
	c, _ := newTestClient(t, r, nil)
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"--json", "--all", "--states=all"}; len(r.calls) != 1 || !slices.Equal(r.calls[0].args, want) {
		t.Fatalf("calls %v, want squeue %q", r.calls, want)
	}
}
