package traces

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"
)

// README constants of the LS6 folder (tacc-ls6-a100/README.md, computed on
// the full file of 24,777 jobs; the cut the synth was fitted on differs
// slightly). Written here so the test runs without the shared folder.
const (
	readmeOneNode     = 0.7954 // 1 node 79.54%
	readmeHitShare    = 0.1565 // 15.65% ran ≥ their limit
	readmeRuntimeP50  = 459.0
	readmeRuntimeP90  = 78357.0
	readmeRuntimeP99  = 172823.0
	readmeWaitP50     = 25.0
	readmeWaitP90     = 42897.0
	readmeLimitP50Min = 300.0
	readmeJobsPerDay  = 165.0
)

func TestSynthMatchesLS6README(t *testing.T) {
	const days = 120
	jobs, err := Synth("ls6", days, 7)
	if err != nil {
		t.Fatal(err)
	}
	b := NewStatsBuilder()
	for i := range jobs {
		b.Add(&jobs[i])
	}
	s := b.Stats()
	perDay := float64(s.Jobs) / days
	t.Logf("synth %d days: %d jobs (%.0f/day), 1-node %.4f, hit %.4f, runtime %+v, wait %+v, limit p50 %.0f min",
		days, s.Jobs, perDay, s.Nodes[0].Share, s.HitShare, s.Runtime, s.Wait, s.MedianLimitS/60)
	checks := []struct {
		name      string
		got, want float64
		lo, hi    float64 // accepted range, as factors of want (relative) or absolute when abs
		abs       bool
	}{
		{"jobs/day (±20%)", perDay, readmeJobsPerDay, 0.8, 1.2, false},
		{"1-node share (±3 points)", s.Nodes[0].Share, readmeOneNode, -0.03, 0.03, true},
		{"limit-hit share (±3 points)", s.HitShare, readmeHitShare, -0.03, 0.03, true},
		{"runtime p50 (×0.5–2)", s.Runtime.P50, readmeRuntimeP50, 0.5, 2, false},
		{"runtime p90 (±25%)", s.Runtime.P90, readmeRuntimeP90, 0.75, 1.25, false},
		{"runtime p99 (±10%)", s.Runtime.P99, readmeRuntimeP99, 0.9, 1.1, false},
		{"wait p50 (×0.2–5)", s.Wait.P50, readmeWaitP50, 0.2, 5, false},
		{"wait p90 (×0.5–2)", s.Wait.P90, readmeWaitP90, 0.5, 2, false},
		{"time limit p50 (×0.8–1.6: cut has 450 min)", s.MedianLimitS / 60, readmeLimitP50Min, 0.8, 1.6, false},
	}
	for _, c := range checks {
		lo, hi := c.want*c.lo, c.want*c.hi
		if c.abs {
			lo, hi = c.want+c.lo, c.want+c.hi
		}
		if c.got < lo || c.got > hi || math.IsNaN(c.got) {
			t.Errorf("%s: got %.4g, want %.4g in [%.4g, %.4g]", c.name, c.got, c.want, lo, hi)
		}
	}
	// Arrivals follow the hour-of-day weights: more submissions 9–17h than 0–8h.
	var day, night int
	for _, j := range jobs {
		h := j.Submit.In(centralTime).Hour()
		if h >= 9 && h < 17 {
			day++
		} else if h < 8 {
			night++
		}
	}
	if day <= 2*night {
		t.Errorf("submissions 9–17h %d, 0–8h %d: want the daytime peak", day, night)
	}
}

func TestSynthDeterministic(t *testing.T) {
	a, _ := Synth("ls6", 3, 42)
	b, _ := Synth("ls6", 3, 42)
	c, _ := Synth("ls6", 3, 43)
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed gave different traces (%d, %d jobs)", len(a), len(b))
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("different seeds gave the same trace")
	}
	if _, err := Synth("philly", 3, 1); err == nil {
		t.Errorf("Synth(philly) succeeded")
	}
}

func TestSynthLS6RoundTrip(t *testing.T) {
	jobs, _ := Synth("ls6", 4, 1)
	var buf bytes.Buffer
	if err := WriteLS6(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf, "synth.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for j, err := range All(r) {
		if err != nil {
			t.Fatal(err)
		}
		w := jobs[i]
		// LS6 times are zone-less wall clock: in the repeated hour when DST
		// ends only the wall clock survives the round trip.
		if j.ID != w.ID || !sameWall(j.Submit, w.Submit) || !sameWall(j.Start, w.Start) || !sameWall(j.End, w.End) || j.Nodes != w.Nodes ||
			j.TimeLimit != w.TimeLimit || j.User != w.User || j.State != w.State || j.ExitCode != w.ExitCode {
			t.Fatalf("job %d read back as %+v, want %+v", i, j, w)
		}
		i++
	}
	if i != len(jobs) {
		t.Errorf("read %d jobs, wrote %d", i, len(jobs))
	}
}

func sameWall(a, b time.Time) bool {
	const layout = "2006-01-02T15:04:05"
	return a.Equal(b) || a.In(centralTime).Format(layout) == b.In(centralTime).Format(layout)
}

// TestSynthSpansItsDays (#51): a trace of D days has every submission in
// those D days (before, chains still going at the end trailed on: 30 days
// spanned 48.7), its last one on the last day, and it starts with the
// jobs of a trace of fewer days.
func TestSynthSpansItsDays(t *testing.T) {
	const days = 30
	jobs, err := Synth("ls6", days, 1)
	if err != nil {
		t.Fatal(err)
	}
	cut := SynthEpoch.AddDate(0, 0, days)
	last := jobs[len(jobs)-1].Submit // sorted by submit
	if jobs[0].Submit.Before(SynthEpoch) || !last.Before(cut) || last.Before(cut.AddDate(0, 0, -1)) {
		t.Errorf("submits %s .. %s, want within [%s, %s) and the last on the last day", jobs[0].Submit, last, SynthEpoch, cut)
	}
	fewer, err := Synth("ls6", days-10, 1)
	if err != nil {
		t.Fatal(err)
	}
	cut = SynthEpoch.AddDate(0, 0, days-10)
	var head []Job
	for _, j := range jobs {
		if j.Submit.Before(cut) {
			j.ID = "" // numbered in order over the whole trace
			head = append(head, j)
		}
	}
	for i := range fewer {
		fewer[i].ID = ""
	}
	if !reflect.DeepEqual(head, fewer) {
		t.Errorf("the first %d days of a %d-day trace (%d jobs) differ from a %d-day trace (%d jobs)", days-10, days, len(head), days-10, len(fewer))
	}
}
