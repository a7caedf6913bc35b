package scenario_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
)

func TestProtocolInjections(t *testing.T) {
	sc := &scenario.Scenario{First: time.Date(2023, 1, 1, 6, 0, 0, 0, time.UTC), Last: time.Date(2023, 1, 5, 0, 0, 0, 0, time.UTC)}
	p := scenario.Protocol{Every: 12 * time.Hour, WarmUp: 48 * time.Hour}
	// first start + 48 h = Jan 3 06:00; then 18:00; Jan 4 06:00, 18:00; the last submit (Jan 5 00:00) ends it.
	got := p.Injections(sc, time.Time{}, time.Time{})
	want := []time.Time{time.Date(2023, 1, 3, 6, 0, 0, 0, time.UTC), time.Date(2023, 1, 3, 18, 0, 0, 0, time.UTC),
		time.Date(2023, 1, 4, 6, 0, 0, 0, time.UTC), time.Date(2023, 1, 4, 18, 0, 0, 0, time.UTC)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("injections %v, want %v", got, want)
	}
	// from after the warm-up wins; until cuts.
	got = p.Injections(sc, time.Date(2023, 1, 4, 0, 0, 0, 0, time.UTC), time.Date(2023, 1, 4, 12, 0, 0, 0, time.UTC))
	if len(got) != 1 || !got[0].Equal(time.Date(2023, 1, 4, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("windowed injections %v, want [Jan 4 00:00]", got)
	}
	if err := (scenario.Protocol{Tick: time.Minute, Limit: time.Hour, Every: time.Hour, Lead: 2 * time.Hour}).Validate(); err == nil {
		t.Error("a lead above the limit must be refused")
	}
}

func TestScenarioScaled(t *testing.T) {
	sc := modeltest.Scenario(t)
	a, err := sc.Scaled(1.5, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sc.Scaled(1.5, 3, 0)
	if !reflect.DeepEqual(a.Specs, b.Specs) {
		t.Error("same seed, different scaled scenarios")
	}
	n := len(sc.Specs)
	// Each job is copied with probability 0.5: the count is Binomial(n, 0.5),
	// within 5 standard deviations (√n/2 each) of n/2 for any sane seed.
	extra := len(a.Specs) - n
	if sd := 0.5 * float64(sqrtInt(n)); float64(extra) < float64(n)/2-5*sd || float64(extra) > float64(n)/2+5*sd {
		t.Errorf("%d copies of %d jobs, want about %d", extra, n, n/2)
	}
	ids := map[string]bool{}
	for i, sp := range a.Specs {
		if ids[sp.ID] {
			t.Fatalf("duplicate id %s", sp.ID)
		}
		ids[sp.ID] = true
		if i > 0 && sp.Submit.Before(a.Specs[i-1].Submit) {
			t.Fatal("scaled specs not in submit order")
		}
	}
	if a.Scale != 1.5 || a.Name != "synth-ls6×1.5" {
		t.Errorf("scale %v name %q", a.Scale, a.Name)
	}
	if same, _ := sc.Scaled(1, 3, 0); same != sc {
		t.Error("scale 1 must return the scenario itself")
	}
	if _, err := sc.Scaled(0.5, 3, 0); err == nil {
		t.Error("scale below 1 must be refused")
	}
}

func sqrtInt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

func TestObserveFromPorts(t *testing.T) {
	sc := modeltest.Scenario(t)
	p := modeltest.Protocol().WithDefaults(sc.Config)
	base, err := sc.NewSim()
	if err != nil {
		t.Fatal(err)
	}
	at := sc.First.Add(4 * 24 * time.Hour)
	base.Run(at)
	c, err := scenario.StartChain(base, p, at, 1, "obs")
	if err != nil {
		t.Fatal(err)
	}
	now := c.TickTime(3)
	obs, err := c.Observe(now)
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := c.S.Snapshot(context.Background())
	if !reflect.DeepEqual(obs.Snapshot, snap) {
		t.Error("observation snapshot differs from the cluster's")
	}
	if !reflect.DeepEqual(obs.History, c.S.History(now.Add(-24*time.Hour))) {
		t.Error("observation history is not the last 24 h of the record")
	}
	if obs.Predecessor == nil || obs.Predecessor.ID != c.PredID || obs.Predecessor.State != provisioner.StateRunning || !obs.Predecessor.Start.Equal(c.PredStart) {
		t.Errorf("predecessor %+v", obs.Predecessor)
	}
	if obs.Successor.Nodes != 1 || obs.Successor.GPUs != 3 || obs.Successor.TimeLimit != 12*time.Hour || obs.Chain.ID != "obs" || !obs.Now.Equal(now) {
		t.Errorf("successor %+v chain %+v now %s", obs.Successor, obs.Chain, obs.Now)
	}
	// A backend without accounting: no history, no error; a predecessor that left the queue is found in the history.
	fin := provisioner.Job{ID: "p9", State: provisioner.StateCompleted, Start: now.Add(-time.Hour), End: now}
	o2, err := scenario.Observe(context.Background(), c.S, testHistory{jobs: []provisioner.Job{fin}}, now, 0, nil, "p9", provisioner.SubmitRequest{})
	if err != nil || o2.Predecessor == nil || o2.Predecessor.State != provisioner.StateCompleted {
		t.Errorf("finished predecessor from history: %+v, %v", o2.Predecessor, err)
	}
	o3, err := scenario.Observe(context.Background(), c.S, testHistory{err: provisioner.ErrNoAccounting}, now, 0, nil, "", provisioner.SubmitRequest{})
	if err != nil || o3.History != nil {
		t.Errorf("no accounting: %v, history %d", err, len(o3.History))
	}
	if _, err := scenario.Observe(context.Background(), c.S, testHistory{err: errors.New("boom")}, now, 0, nil, "", provisioner.SubmitRequest{}); err == nil {
		t.Error("a history failure other than ErrNoAccounting must be reported")
	}
}

type testHistory struct {
	jobs []provisioner.Job
	err  error
}

func (h testHistory) History(context.Context, time.Time) ([]provisioner.Job, error) {
	return h.jobs, h.err
}
