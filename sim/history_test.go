package sim

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// historyScan is the definition History must agree with: every job whose
// current run started, and which started or ended at or after since or is
// still running, in (start, index) order — found by scanning all jobs.
func historyScan(s *Sim, since time.Time) []string {
	from := since.Unix()
	var idx []int32
	for j := range s.dyns {
		d := &s.dyns[j]
		if d.start >= 0 && (d.start >= from || d.end >= from || d.state == stRunning) {
			idx = append(idx, int32(j))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(s.dyns[a].start, s.dyns[b].start); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = s.spec(j).id
	}
	return out
}

func historyIDs(jobs []provisioner.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// TestHistoryMatchesScan replays a synthetic trace in which a fifth of the
// jobs run in a preemptible, requeued QOS (so jobs start more than once) and
// submits probes through the seam in a fork; at every step History (which
// reads the start log back only one longest-limit) must list exactly the
// jobs the full scan finds.
func TestHistoryMatchesScan(t *testing.T) {
	cfg := LS6()
	cfg.QOS = []QOSConfig{{Name: "scavenger", Preemptible: true, PreemptMode: "requeue"}}
	jobs := synthJobs(3000, 7)
	for i := range jobs {
		if i%5 == 0 {
			jobs[i].QOS = "scavenger"
		}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(slices.Clone(jobs)); err != nil {
		t.Fatal(err)
	}
	requeued := 0
	check := func(sim *Sim, label string) {
		t.Helper()
		for _, back := range []time.Duration{0, time.Hour, 24 * time.Hour, 72 * time.Hour} {
			since := sim.Now().Add(-back)
			got, want := historyIDs(sim.History(since)), historyScan(sim, since)
			if !slices.Equal(got, want) {
				t.Fatalf("%s at %s, since −%s: History lists %d jobs, the scan %d\n got %v\nwant %v",
					label, sim.Now(), back, len(got), len(want), got, want)
			}
		}
	}
	t0 := jobs[0].Submit
	for step := 1; step <= 40; step++ {
		s.Run(t0.Add(time.Duration(step) * 12 * time.Hour))
		check(s, "replay")
		if step%10 == 0 {
			f := s.Fork()
			if _, err := f.Submit(context.Background(), provisioner.SubmitRequest{Name: "probe", Account: "mirage", TimeLimit: 2 * time.Hour, Nodes: 2, GPUs: 6}); err != nil {
				t.Fatal(err)
			}
			f.Run(f.Now().Add(6 * time.Hour))
			check(f, "fork")
		}
	}
	for _, r := range s.Results() {
		requeued += r.Requeues
	}
	if requeued == 0 {
		t.Fatal("no job was requeued: the test does not exercise restarts (make more jobs preemptible)")
	}
	t.Logf("%d requeues", requeued)
}

// BenchmarkHistory24h asks a mid-trace simulator of 18,000 LS6-like jobs for
// the last 24 hours of history, as the engine does on every decision cycle.
func BenchmarkHistory24h(b *testing.B) {
	jobs := synthJobs(18000, 1)
	s := newLoaded(b, jobs)
	s.Run(jobs[9000].Submit)
	since := s.Now().Add(-24 * time.Hour)
	n := 0
	for b.Loop() {
		n = len(s.History(since))
	}
	b.ReportMetric(float64(n), "jobs")
}
