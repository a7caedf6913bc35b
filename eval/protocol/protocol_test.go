package protocol

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/traces"
)

// TestProtocolsPlayTheCell: the three protocols behind one interface, on
// a 4-node cluster, empty but for a 1-minute job on the hour, with injections at t0+1h and t0+3h (warm-up 1 h,
// every 2 h, window 5 h), one 1-node chain each, 55-minute limits.
// Worked out by hand:
//
//	pair:    the reactive successor is submitted 1 min before its
//	         predecessor's end and starts at once on a free node: gap −1 min,
//	         2 samples, nothing unmeasured, lead 1m0s recorded.
//	chain-3: reactive gaps +5 min (TestRunChainsEmptyCluster), 2 chains × 2
//	         hand-offs; the Cell's name and load scale, not the Setup's.
//	run:     named "run"; its work, restart, checkpoint and hand-off
//	         recorded; one RunSample per chain.
func TestProtocolsPlayTheCell(t *testing.T) {
	var jobs []traces.Job // one 1-minute job on the hour keeps the replay going through the window
	for h := range 7 {
		jobs = append(jobs, traceJob(fmt.Sprint(h+1), chainT0.Add(time.Duration(h)*time.Hour), 0, time.Minute, 10*time.Minute, 1))
	}
	sc := chainScenario(t, 4, jobs...)
	cell := Cell{Scenario: sc, Name: "cell", LoadScale: 2, From: chainT0, Until: chainT0.Add(5 * time.Hour), Policies: []string{metrics.Reference},
		Factory: func(probe models.OracleProbe) provisioner.PolicyFactory {
			return models.PolicyFactory("", models.PolicyOptions{Probe: probe})
		}}
	setup := ChainSetup{Cell: "ignored", LoadScale: 9, K: 3, Warmup: time.Hour, Interval: 2 * time.Hour, Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour}

	var pair Protocol = Pair{Protocol: scenario.Protocol{Every: 2 * time.Hour, WarmUp: time.Hour, Tick: 10 * time.Minute, Limit: 55 * time.Minute, Nodes: []int{1}, Horizon: time.Hour}}
	p, err := pair.Play(context.Background(), cell)
	if err != nil {
		t.Fatal(err)
	}
	if pair.Name() != "pair" || p.Injections != 2 || len(p.Samples) != 2 || p.Unmeasured[metrics.Reference] != 0 || p.Params["lead"] != "1m0s" || p.Runs != nil {
		t.Fatalf("pair: name %s, %d injections, %d samples, unmeasured %v, params %v", pair.Name(), p.Injections, len(p.Samples), p.Unmeasured, p.Params)
	}
	for _, s := range p.Samples {
		if s.Gap != -time.Minute || s.Cell != "cell" || s.LoadScale != 2 || s.Protocol != metrics.ProtocolPair {
			t.Errorf("pair sample %+v: want gap −1 min in cell \"cell\", load scale 2", s)
		}
	}

	var chains Protocol = Chains{Setup: setup}
	c, err := chains.Play(context.Background(), cell)
	if err != nil {
		t.Fatal(err)
	}
	if chains.Name() != "chain-3" || c.Injections != 2 || len(c.Samples) != 4 || c.Unmeasured[metrics.Reference] != 0 || len(c.Params) != 0 || c.Runs != nil {
		t.Fatalf("chain-3: name %s, %d injections, %d samples, unmeasured %v, params %v", chains.Name(), c.Injections, len(c.Samples), c.Unmeasured, c.Params)
	}
	for _, s := range c.Samples {
		if s.Gap != 5*time.Minute || s.Cell != "cell" || s.LoadScale != 2 || s.Protocol != "chain-3" {
			t.Errorf("chain sample %+v: want gap +5 min in cell \"cell\", load scale 2", s)
		}
	}

	setup.Work = 2 * time.Hour
	var runs Protocol = Chains{Setup: setup}
	r, err := runs.Play(context.Background(), cell)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"work": "2h0m0s", "restart": "0s", "checkpoint": "0s", "handoff": "true"}
	if runs.Name() != metrics.ProtocolRun || r.Injections != 2 || len(r.Runs) != 2 || len(r.Params) != len(want) {
		t.Fatalf("run: name %s, %d injections, %d runs, params %v", runs.Name(), r.Injections, len(r.Runs), r.Params)
	}
	for k, v := range want {
		if r.Params[k] != v {
			t.Errorf("run param %s = %q, want %q", k, r.Params[k], v)
		}
	}

	empty := cell
	empty.From = chainT0.Add(6 * time.Hour)
	if _, err := pair.Play(context.Background(), empty); !errors.Is(err, ErrBadSetup) {
		t.Errorf("pair on an empty window: %v, want ErrBadSetup", err)
	}
}
