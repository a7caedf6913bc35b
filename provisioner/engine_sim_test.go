package provisioner_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// simCluster adapts sim.Sim to provisioner.HistorySource.
type simCluster struct{ *sim.Sim }

func (c simCluster) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	return c.Sim.History(since), nil
}

type simClock struct{ s *sim.Sim }

func (c simClock) Now() time.Time { return c.s.Now() }

var simT0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// newFourNodeSim is an empty simulated cluster of 4 nodes × 4 GPUs at simT0.
func newFourNodeSim(t *testing.T) *sim.Sim {
	t.Helper()
	cfg := sim.Defaults()
	for i := 1; i <= 4; i++ {
		cfg.Nodes = append(cfg.Nodes, sim.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 8, GPUs: 4})
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetStart(simT0)
	return s
}

// runSimChain registers one chain at simT0, submits its first segment as
// `mirage submit` does, then runs the daemon's cycle every 10 minutes of
// logical time for 5 hours on an empty 4-node cluster. It returns the
// chain, the engine's recorded gaps and the starts and ends of the chain's
// jobs as the simulator reports them, by segment index.
func runSimChain(t *testing.T, policy string, segments int, runtime func(seg int) time.Duration) (*provisioner.Chain, []float64, map[int][]provisioner.Job) {
	t.Helper()
	ctx := context.Background()
	s := newFourNodeSim(t)
	if runtime != nil {
		s.SetRuntimeFunc(func(req provisioner.SubmitRequest) time.Duration {
			tag, _ := provisioner.ParseTag(req.Comment)
			if d := runtime(tag.Segment); d > 0 {
				return d
			}
			return req.TimeLimit
		})
	}
	st := provisioner.NewMemStore()
	ch := provisioner.Chain{ID: "c-sim-" + policy, Name: "sim-chain", Script: "/x.sbatch", Policy: policy, Segments: segments, MaxRetries: 2,
		Partition: "batch", TimeLimit: 55 * time.Minute, Nodes: 1, GPUs: 4, State: provisioner.ChainActive, Created: simT0}
	if err := st.PutChain(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	eng := &provisioner.Engine{Cluster: simCluster{s}, Store: st, Clock: simClock{s}, Log: slog.New(slog.DiscardHandler)}
	if _, err := eng.CycleChains(ctx, []string{ch.ID}); err != nil {
		t.Fatal(err)
	}
	s.OnTick(10*time.Minute, func(time.Time, provisioner.Cluster) {
		if _, err := eng.Cycle(ctx); err != nil {
			t.Errorf("cycle at %s: %v", s.Now(), err)
		}
	})
	s.Run(simT0.Add(5 * time.Hour))
	got, err := st.Chain(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := st.Events(ctx, ch.ID)
	var gaps []float64
	for _, e := range evs {
		if e.Kind == provisioner.EventGap {
			gaps = append(gaps, e.Value)
		}
	}
	bySeg := map[int][]provisioner.Job{}
	for _, j := range s.History(simT0) {
		tag, ok := provisioner.ParseTag(j.Comment)
		if !ok || tag.Chain != ch.ID {
			t.Errorf("job %s not tagged with the chain: %q", j.ID, j.Comment)
			continue
		}
		bySeg[tag.Segment] = append(bySeg[tag.Segment], j)
	}
	return got, gaps, bySeg
}

func TestSimChainBaselines(t *testing.T) {
	// Empty 4-node cluster, limit 55 min, every segment uses its limit
	// (TIMEOUT), decisions at 00:10, 00:20, ... after the first submission at 00:00.
	//   reactive:       seg0 00:00–00:55; seen ended at 01:00 → seg1 01:00–01:55; at 02:00 → seg2 02:00–02:55.
	//                   gaps +5 min, +5 min.
	//   lead (10 min):  lead point 00:45 → submitted at 00:50, starts at once: seg1 00:50–01:45 (gap 00:50−00:55 = −5 min);
	//                   lead point 01:35 → 01:40: seg2 01:40–02:35 (gap −5 min).
	//   dependency:     at 00:10 (seg0 running) seg1 submitted afterany:seg0, released at 00:55 (gap 0);
	//                   seg1 pending until then: wait; at 01:00 (seg1 running) seg2 afterany:seg1,
	//                   released at 01:50 (gap 0).
	//   start-estimate: nothing pending, the only recent start (seg0) waited 0 → W = 0; submit once the
	//                   remaining time R = 00:55 − now ≤ slack 10 min: at 00:50 (R = 5 min) → as lead: −5, −5 min.
	cases := []struct {
		policy string
		starts []time.Duration // of segments 0, 1, 2 after simT0
		gaps   []float64       // seconds
	}{
		{provisioner.PolicyReactive, []time.Duration{0, 60 * time.Minute, 120 * time.Minute}, []float64{300, 300}},
		{provisioner.PolicyLead, []time.Duration{0, 50 * time.Minute, 100 * time.Minute}, []float64{-300, -300}},
		{provisioner.PolicyDependency, []time.Duration{0, 55 * time.Minute, 110 * time.Minute}, []float64{0, 0}},
		{provisioner.PolicyStartEstimate, []time.Duration{0, 50 * time.Minute, 100 * time.Minute}, []float64{-300, -300}},
	}
	for _, c := range cases {
		t.Run(c.policy, func(t *testing.T) {
			ch, gaps, bySeg := runSimChain(t, c.policy, 3, nil)
			if ch.State != provisioner.ChainDone {
				t.Fatalf("chain %s: %s", ch.State, ch.Reason)
			}
			if len(bySeg) != 3 {
				t.Fatalf("segments run: %d, want 3", len(bySeg))
			}
			for i, want := range c.starts {
				js := bySeg[i]
				if len(js) != 1 {
					t.Fatalf("segment %d: %d jobs, want exactly 1", i, len(js))
				}
				if got := js[0].Start.Sub(simT0); got != want {
					t.Errorf("segment %d started at +%s, want +%s", i, got, want)
				}
				if js[0].State != provisioner.StateTimeout {
					t.Errorf("segment %d ended %s", i, js[0].State)
				}
			}
			if fmt.Sprint(gaps) != fmt.Sprint(c.gaps) {
				t.Errorf("recorded gaps %v s, want %v s", gaps, c.gaps)
			}
		})
	}
}

func TestSimChainUntilDone(t *testing.T) {
	// Reactive, --until-done; segment 1 finishes its work after 30 min.
	// seg0 00:00–00:55 TIMEOUT; seg1 01:00–01:30 COMPLETED; seen at 01:30: done, no third job.
	ch, gaps, bySeg := runSimChain(t, provisioner.PolicyReactive, 0, func(seg int) time.Duration {
		if seg == 1 {
			return 30 * time.Minute
		}
		return 0
	})
	if ch.State != provisioner.ChainDone || len(bySeg) != 2 {
		t.Fatalf("chain %s (%s), %d segments run; want done after 2", ch.State, ch.Reason, len(bySeg))
	}
	if j := bySeg[1][0]; j.State != provisioner.StateCompleted || j.End.Sub(simT0) != 90*time.Minute {
		t.Errorf("segment 1: %s ending +%s", j.State, j.End.Sub(simT0))
	}
	if fmt.Sprint(gaps) != "[300]" {
		t.Errorf("gaps %v", gaps)
	}
}
