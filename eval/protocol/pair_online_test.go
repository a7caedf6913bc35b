package protocol

import (
	"context"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
)

// testLearner is an online policy whose decisions depend on the hand-offs
// it is given: with an even number it submits at once, with an odd number
// it waits until its predecessor has 2 h left. It records what it saw.
type testLearner struct {
	mu      *sync.Mutex
	seen    map[string][]string    // chain → "now: chain@known …" per decision
	predEnd map[string]time.Time   // chain → its predecessor's end
	kept    map[string][]time.Time // chain → decision times
}

func (l testLearner) Name() string             { return "learner" }
func (l testLearner) LearnsFromHandOffs() bool { return true }
func (l testLearner) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	var parts []string
	for _, h := range obs.HandOffs {
		if h.Known.After(obs.Now) || h.Policy != "learner" {
			return provisioner.Decision{}, fmt.Errorf("given %+v at %s", h, obs.Now)
		}
		parts = append(parts, h.ChainID)
	}
	sort.Strings(parts)
	p := obs.Predecessor
	l.mu.Lock()
	l.seen[obs.Chain.ID] = append(l.seen[obs.Chain.ID], obs.Now.Format(time.RFC3339)+": "+strings.Join(parts, " "))
	l.kept[obs.Chain.ID] = append(l.kept[obs.Chain.ID], obs.Now)
	l.predEnd[obs.Chain.ID] = p.Start.Add(p.TimeLimit)
	l.mu.Unlock()
	if len(obs.HandOffs)%2 == 0 || p.Start.Add(p.TimeLimit).Sub(obs.Now) <= 2*time.Hour {
		return provisioner.Decision{Action: provisioner.SubmitNow, Reason: "test"}, nil
	}
	return provisioner.Decision{Action: provisioner.Wait, Reason: "test"}, nil
}

// TestRunPairsFeedsOnlinePolicy: the pair replay gives a policy that learns
// from hand-offs exactly the outcomes of its own chains injected earlier
// that were known (successor started, predecessor ended) by each decision,
// worked out here from the samples; the others get none; and the result
// does not depend on the number of workers.
func TestRunPairsFeedsOnlinePolicy(t *testing.T) {
	sc := testScenario(t)
	run := func(workers int) ([]metrics.Sample, testLearner) {
		l := testLearner{mu: &sync.Mutex{}, seen: map[string][]string{}, predEnd: map[string]time.Time{}, kept: map[string][]time.Time{}}
		factory := func(probe models.OracleProbe) provisioner.PolicyFactory {
			f := testFactory(testFieldRule{})(probe)
			return func(name string) (provisioner.Policy, error) {
				if name == "learner" {
					return l, nil
				}
				return f(name)
			}
		}
		cfg := PairConfig{Scenario: sc, Protocol: testProtocol(), From: sc.First.Add(3 * 24 * time.Hour), Until: sc.First.Add(6 * 24 * time.Hour),
			Policies: []string{"reactive", "learner"}, Factory: factory, Workers: workers}
		out, err := RunPairs(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return out, l
	}
	one, l1 := run(1)
	three, l3 := run(3)
	if !reflect.DeepEqual(one, three) || !reflect.DeepEqual(l1.seen, l3.seen) {
		t.Fatal("1 and 3 workers gave different samples or fed different hand-offs")
	}
	// What each decision should have been given, from the samples.
	type outcome struct {
		inject time.Time
		known  time.Time
	}
	byChain := map[string]outcome{}
	fed := 0
	for _, s := range one {
		if s.Policy != "learner" || s.Censored {
			continue
		}
		end, ok := l1.predEnd[s.ChainID]
		if !ok {
			t.Fatalf("chain %s: no decision recorded", s.ChainID)
		}
		byChain[s.ChainID] = outcome{s.Inject, end.Add(max(s.Gap, 0))}
	}
	for _, s := range one {
		if s.Policy != "learner" {
			continue
		}
		for k, now := range l1.kept[s.ChainID] {
			var want []string
			for id, o := range byChain {
				if o.inject.Before(s.Inject) && !o.known.After(now) {
					want = append(want, id)
				}
			}
			sort.Strings(want)
			fed += len(want)
			if got := l1.seen[s.ChainID][k]; got != now.Format(time.RFC3339)+": "+strings.Join(want, " ") {
				t.Errorf("chain %s decision %d: given %q, want %v", s.ChainID, k, got, want)
			}
		}
	}
	if fed == 0 {
		t.Fatal("no decision was given any hand-off: the test shows nothing")
	}
}
