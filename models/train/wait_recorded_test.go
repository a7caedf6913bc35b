package train

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// TestStartHistoryBaselines works the history baselines out by hand: 12
// one-node jobs that started at minutes 1…12 and waited 1…12 minutes, an
// 8-node job, and a held job (left out).
func TestStartHistoryBaselines(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var jobs []traces.Job
	for i := 1; i <= 12; i++ {
		st := t0.Add(time.Duration(i) * time.Minute)
		jobs = append(jobs, traces.Job{ID: "a", Nodes: 1, Submit: st.Add(-time.Duration(i) * time.Minute), Start: st, End: st.Add(time.Hour)})
	}
	jobs = append(jobs, traces.Job{ID: "big", Nodes: 8, Submit: t0, Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)})
	jobs = append(jobs, traces.Job{ID: "held", Nodes: 1, Submit: t0, Start: t0.Add(30 * time.Second), End: t0.Add(time.Hour)})
	reason := make([]string, len(jobs))
	reason[len(jobs)-1] = sim.HoldIdle
	h := newStartHistory(jobs, reason)

	// At minute 11.5: the 11 jobs that started by then waited 1…11 min.
	med, lo, hi, qb, ok := h.at(t0.Add(11*time.Minute+30*time.Second), "1 node")
	if !ok {
		t.Fatal("11 earlier starts: want a baseline")
	}
	// median 6 min; p10 at position 1.0 → 2 min; p90 at position 9.0 → 10 min.
	if med != 360 || lo != 120 || hi != 600 {
		t.Errorf("median %v p10 %v p90 %v, want 360 120 600", med, lo, hi)
	}
	// QBETS, n = 11, q = 0.5, c = 0.95: the smallest k with
	// P(Bin(11, 0.5) ≤ k−1) ≥ 0.95 is k = 9 (P(≤ 8) = 0.967, P(≤ 7) = 0.887): 9 min.
	if qb != 540 {
		t.Errorf("QBETS bound %v, want 540 (the 9th of 11)", qb)
	}
	// At minute 5: only 4 earlier starts — too few.
	if _, _, _, _, ok := h.at(t0.Add(5*time.Minute), "1 node"); ok {
		t.Error("4 earlier starts gave a baseline; want none below 10")
	}
	// The 8-node job is in its own group, alone.
	if _, _, _, _, ok := h.at(t0.Add(3*time.Hour), "5-8 nodes"); ok {
		t.Error("one 8-node start gave a baseline")
	}
	for n, want := range map[int]string{1: "1 node", 2: "2-4 nodes", 4: "2-4 nodes", 5: "5-8 nodes", 8: "5-8 nodes", 9: ">8 nodes"} {
		if g := sizeGroup(n); g != want {
			t.Errorf("sizeGroup(%d) = %s, want %s", n, g, want)
		}
	}
}

// TestRelabelRecorded: a warm-up job and a job that waited 3 h while both
// nodes stood idle (an idle-nodes hold) are dropped; the job that waited
// 10 minutes keeps its sample with the recorded wait; an unknown id goes.
func TestRelabelRecorded(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	jobs := []traces.Job{
		{ID: "warm", User: "u", Nodes: 1, Submit: t0, Start: t0, End: t0.Add(time.Hour), TimeLimit: 2 * time.Hour},
		{ID: "ok", User: "u", Nodes: 1, Submit: t0.Add(72 * time.Hour), Start: t0.Add(72*time.Hour + 10*time.Minute), End: t0.Add(73 * time.Hour), TimeLimit: 2 * time.Hour},
		{ID: "held", User: "v", Nodes: 1, Submit: t0.Add(80 * time.Hour), Start: t0.Add(83 * time.Hour), End: t0.Add(84 * time.Hour), TimeLimit: 2 * time.Hour},
	}
	cfg := sim.Defaults()
	cfg.Nodes = []sim.NodeConfig{{Name: "n1", CPUs: 8}, {Name: "n2", CPUs: 8}}
	sc, err := scenario.NewScenario("t", jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &dataset.WaitData{Samples: []dataset.WaitSample{{ID: "warm", Wait: 1}, {ID: "ok", Wait: 2, Censored: true}, {ID: "held", Wait: 3}, {ID: "nosuch", Wait: 4}}}
	got := RelabelRecorded(sc, d)
	if len(got.Samples) != 1 || got.Samples[0].ID != "ok" || got.Samples[0].Wait != 600 || got.Samples[0].Censored {
		t.Fatalf("relabelled %+v, want only ok with 600 s, uncensored", got.Samples)
	}
	if len(d.Samples) != 4 {
		t.Error("the input dataset was changed")
	}
}
