package provisioner

import (
	"context"
	"testing"
	"time"
)

var hoT0 = time.Date(2026, 4, 6, 12, 0, 0, 0, time.UTC)

func hoAt(h float64) time.Time { return hoT0.Add(time.Duration(h * float64(time.Hour))) }

// TestHandOffs: the gaps of final attempts, known at the later of the
// successor's start and the predecessor's end, in that order.
func TestHandOffs(t *testing.T) {
	recs := []ChainRecord{
		{Chain: Chain{ID: "a", Policy: "xgb-online", Nodes: 8}, Segments: []Segment{
			{Index: 0, State: StateTimeout, Start: hoAt(-30), End: hoAt(-20)},
			// started 1 h before its predecessor ended: an overlap, known at -20 h
			{Index: 1, State: StateTimeout, Start: hoAt(-21), End: hoAt(-10)},
			// a failed first attempt, then a retry starting 2 h after -10 h
			{Index: 2, Attempt: 0, State: StateFailed, Start: hoAt(-9.5), End: hoAt(-9)},
			{Index: 2, Attempt: 1, State: StateRunning, Start: hoAt(-8)},
		}},
		{Chain: Chain{ID: "b", Policy: "lead", Nodes: 1}, Segments: []Segment{
			{Index: 0, State: StateTimeout, Start: hoAt(-40), End: hoAt(-15)},
			{Index: 1, State: StateRunning, Start: hoAt(-14.5)},
			// not started yet: no gap
			{Index: 2, State: StatePending},
		}},
	}
	got := HandOffs(recs)
	want := []HandOff{
		{ChainID: "b", Policy: "lead", Nodes: 1, Segment: 1, Gap: 30 * time.Minute, Known: hoAt(-14.5)},
		{ChainID: "a", Policy: "xgb-online", Nodes: 8, Segment: 1, Gap: -time.Hour, Known: hoAt(-20)},
		{ChainID: "a", Policy: "xgb-online", Nodes: 8, Segment: 2, Gap: 2 * time.Hour, Known: hoAt(-8)},
	}
	// sorted by Known: -20, -14.5, -8
	want[0], want[1] = want[1], want[0]
	if len(got) != len(want) {
		t.Fatalf("got %d hand-offs %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hand-off %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// seeingPolicy waits and remembers the hand-offs of each observation.
type seeingPolicy struct{ seen [][]HandOff }

func (p *seeingPolicy) Name() string { return "seeing" }
func (p *seeingPolicy) Decide(obs *Observation) (Decision, error) {
	p.seen = append(p.seen, obs.HandOffs)
	return Decision{Action: Wait, Reason: "looking"}, nil
}

// oneJobCluster shows one running job.
type oneJobCluster struct{ job Job }

func (c *oneJobCluster) Snapshot(context.Context) (*Snapshot, error) {
	return &Snapshot{Jobs: []Job{c.job}}, nil
}
func (c *oneJobCluster) Submit(context.Context, SubmitRequest) (string, error) {
	panic("the policy only waits")
}
func (c *oneJobCluster) Cancel(context.Context, string) error         { return nil }
func (c *oneJobCluster) Signal(context.Context, string, string) error { return nil }

// TestEngineGivesHandOffs: a decision sees the hand-offs of ended chains
// as well as active ones, and only those known by its time.
func TestEngineGivesHandOffs(t *testing.T) {
	ctx := context.Background()
	st := NewMemStore()
	put := func(c Chain, segs ...Segment) {
		t.Helper()
		if err := st.PutChain(ctx, &c); err != nil {
			t.Fatal(err)
		}
		for i := range segs {
			segs[i].ChainID = c.ID
			if err := st.PutSegment(ctx, &segs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(Chain{ID: "old", Policy: "seeing", Nodes: 2, State: ChainDone},
		Segment{Index: 0, JobID: "1", State: StateTimeout, Start: hoAt(-20), End: hoAt(-10)},
		Segment{Index: 1, JobID: "2", State: StateCompleted, Start: hoAt(-9), End: hoAt(-5)})
	put(Chain{ID: "live", Policy: "seeing", Nodes: 2, State: ChainActive, Segments: 3, TimeLimit: 10 * time.Hour},
		Segment{Index: 0, JobID: "3", State: StateRunning, Submit: hoAt(-2), Start: hoAt(-1)})
	pol := &seeingPolicy{}
	now := hoT0
	eng := &Engine{Cluster: &oneJobCluster{job: Job{ID: "3", State: StateRunning, Start: hoAt(-1), TimeLimit: 10 * time.Hour, Nodes: 2}},
		Store: st, Clock: ClockFunc(func() time.Time { return now }), Policies: ByName(func(string) (Policy, error) { return pol, nil })}
	if _, err := eng.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if len(pol.seen) != 1 || len(pol.seen[0]) != 1 {
		t.Fatalf("the policy saw %v, want one decision seeing one hand-off", pol.seen)
	}
	if h := pol.seen[0][0]; h.ChainID != "old" || h.Gap != time.Hour || !h.Known.Equal(hoAt(-9)) {
		t.Errorf("hand-off %+v, want chain old, gap 1h, known at -9 h", h)
	}

	// The pure step passes only what is known by its time.
	pol.seen = nil
	recs, err := eng.load(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	future := HandOff{ChainID: "x", Policy: "seeing", Nodes: 2, Gap: time.Hour, Known: hoAt(1)}
	past := HandOff{ChainID: "y", Policy: "seeing", Nodes: 2, Gap: -time.Hour, Known: hoAt(-1)}
	Step(&StepInput{Now: now, Snapshot: &Snapshot{Jobs: []Job{{ID: "3", State: StateRunning, Start: hoAt(-1), TimeLimit: 10 * time.Hour, Nodes: 2}}},
		Chains: recs, HandOffs: []HandOff{past, future}, Policies: map[PolicyKey]Resolved{{Name: "seeing"}: {Policy: pol}}})
	if len(pol.seen) != 1 || len(pol.seen[0]) != 1 || pol.seen[0][0] != past {
		t.Fatalf("the step gave %v, want only the hand-off known before now", pol.seen)
	}
}
