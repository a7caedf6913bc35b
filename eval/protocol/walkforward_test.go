package protocol

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestReplayBaselinesOnTables: the baselines a walk-forward scores
// through the pair replay land on the tables' chains with the outcome the
// tables give at the tick the baseline fires. lead fires at the first
// tick with at most its lead time left, which the tables say without any
// replay; the replay's reactive must equal the tables' deadline gap (the
// walk-forward checks it on every chain and fails otherwise).
func TestReplayBaselinesOnTables(t *testing.T) {
	sc := testScenario(t)
	p := testProtocol()
	p.Tick = 10 * time.Minute
	f := sc.First
	bounds := []time.Time{f.Add(8 * 24 * time.Hour), f.Add(10 * 24 * time.Hour), f.Add(11 * 24 * time.Hour)}
	spec := WFSpec{Jobs: sc.Jobs, TraceName: sc.Name, Cluster: sc.Config, Protocol: p, Bounds: bounds, Seed: 1, Workers: 2,
		Baselines: []string{provisioner.PolicyLead}}
	res, err := RunWalkForward(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	data, err := dataset.GenerateChainData(context.Background(), sc, dataset.GenOptions{Protocol: p, Until: bounds[2]})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	scored := 0
	for _, fold := range Folds(data, bounds) {
		for i := range fold.Test {
			ep := &fold.Test[i]
			k := -1
			for j := range ep.X {
				if ep.Left(j) <= provisioner.DefaultLead.Seconds() {
					k = j
					break
				}
			}
			want[fmt.Sprint(ep.Inject.UTC(), ep.Nodes)], _ = ep.Outcome(k)
			scored++
		}
	}
	got, early := 0, 0
	for _, o := range res.Outcomes {
		if o.Policy != provisioner.PolicyLead {
			continue
		}
		got++
		w, ok := want[fmt.Sprint(o.Inject.UTC(), o.Nodes)]
		if !ok || o.Gap != w {
			t.Errorf("lead on the %d-node chain of %s: gap %.0f s, tables %.0f s (found %v)", o.Nodes, o.Inject, o.Gap, w, ok)
		}
		if o.Gap != o.Reactive {
			early++
		}
	}
	if got != scored || scored == 0 {
		t.Fatalf("lead scored %d chains, the folds hold %d", got, scored)
	}
	if early == 0 {
		t.Errorf("lead never differs from reactive: the test cannot tell its tick from the deadline")
	}
	found := false
	for _, r := range res.Rows {
		found = found || (r.Class == "all" && r.Policy == provisioner.PolicyLead && r.N == scored)
	}
	if !found {
		t.Errorf("no pooled row for lead over %d hand-offs: %+v", scored, res.Rows)
	}
}
