package provisioner_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// simCluster adapts sim.Sim to provisioner.HistorySource.
type simCluster struct{ *sim.Sim }

func (c simCluster) sim() *sim.Sim { return c.Sim }

// simBacked is a backend over a simulator.
type simBacked interface {
	provisioner.Cluster
	sim() *sim.Sim
}

// noUnpin is the simulator as a backend that cannot lift a pending job's
// node list (no provisioner.Unpinner, and its snapshots say so).
type noUnpin struct{ s *sim.Sim }

func (c noUnpin) sim() *sim.Sim { return c.s }
func (c noUnpin) Snapshot(ctx context.Context) (*provisioner.Snapshot, error) {
	snap, err := c.s.Snapshot(ctx)
	if snap != nil {
		snap.Caps.Unpins = false
	}
	return snap, err
}
func (c noUnpin) Submit(ctx context.Context, r provisioner.SubmitRequest) (string, error) {
	return c.s.Submit(ctx, r)
}
func (c noUnpin) Cancel(ctx context.Context, id string) error { return c.s.Cancel(ctx, id) }
func (c noUnpin) Signal(ctx context.Context, id, sig string) error {
	return c.s.Signal(ctx, id, sig)
}
func (c noUnpin) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	return c.s.History(since), nil
}

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
	return runChainOn(t, s, policy, segments, nil)
}

// runChainOn is runSimChain on the simulator s; at, when set, is called
// every 10 minutes of logical time before the daemon's cycle (to submit
// other users' jobs at given times).
func runChainOn(t *testing.T, s *sim.Sim, policy string, segments int, at func(now time.Time)) (*provisioner.Chain, []float64, map[int][]provisioner.Job) {
	t.Helper()
	ch, gaps, bySeg, _ := runChainWith(t, simCluster{s}, policy, "", segments, at)
	return ch, gaps, bySeg
}

// runChainWith is runChainOn on a given backend over a simulator; it also
// returns the chain's decision log.
func runChainWith(t *testing.T, cl simBacked, policy, workload string, segments int, at func(now time.Time)) (*provisioner.Chain, []float64, map[int][]provisioner.Job, []provisioner.DecisionRecord) {
	t.Helper()
	return runChainSpec(t, cl, simRun{policy: policy, workload: workload, segments: segments, at: at})
}

// simRun is one chain run by runChainSpec; zero fields take the defaults
// of runSimChain.
type simRun struct {
	policy, workload string
	segments         int
	limit            time.Duration             // each segment's limit (55 min)
	cycle            time.Duration             // the daemon's interval (10 min)
	horizon          time.Duration             // how long the simulator runs (5 h)
	policies         provisioner.PolicyFactory // nil: the baselines
	at               func(now time.Time)       // called before each cycle
}

// runChainSpec registers the chain r describes at simT0 on the backend cl,
// submits its first segment as mirage submit does, runs the daemon's cycle
// every r.cycle of logical time until r.horizon, and returns the chain,
// its recorded gaps, its jobs by segment index and its decision log.
func runChainSpec(t *testing.T, cl simBacked, r simRun) (*provisioner.Chain, []float64, map[int][]provisioner.Job, []provisioner.DecisionRecord) {
	t.Helper()
	limit, cycle, horizon := cmp.Or(r.limit, 55*time.Minute), cmp.Or(r.cycle, 10*time.Minute), cmp.Or(r.horizon, 5*time.Hour)
	s := cl.sim()
	ctx := context.Background()
	st := provisioner.NewMemStore()
	ch := provisioner.Chain{ID: "c-sim-" + r.policy, Name: "sim-chain", Script: "/x.sbatch", Policy: r.policy, Segments: r.segments, MaxRetries: 2,
		Partition: "batch", TimeLimit: limit, Nodes: 1, GPUs: 4, State: provisioner.ChainActive, Created: simT0, Workload: r.workload}
	if err := st.PutChain(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	eng := &provisioner.Engine{Cluster: cl, Store: st, Clock: simClock{s}, Log: slog.New(slog.DiscardHandler)}
	if r.policies != nil {
		eng.Policies = provisioner.ByName(r.policies)
	}
	if _, err := eng.CycleChains(ctx, []string{ch.ID}); err != nil {
		t.Fatal(err)
	}
	s.OnTick(cycle, func(now time.Time, _ provisioner.Cluster) {
		if r.at != nil {
			r.at(now)
		}
		if _, err := eng.Cycle(ctx); err != nil {
			t.Errorf("cycle at %s: %v", s.Now(), err)
		}
	})
	s.Run(simT0.Add(horizon))
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
		if !ok && r.at != nil {
			continue // another user's job
		}
		if !ok || tag.Chain != ch.ID {
			t.Errorf("job %s not tagged with the chain: %q", j.ID, j.Comment)
			continue
		}
		bySeg[tag.Segment] = append(bySeg[tag.Segment], j)
	}
	recs, err := st.Decisions(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got, gaps, bySeg, recs
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
	//   pin:            three nodes are always free, so it never pins and submits as lead, but in that last
	//                   cycle with a begin time BeginMargin (2 min) before the limit: submitted at 00:50
	//                   with --begin 00:53, seg1 00:53–01:48; at 01:40, --begin 01:46: seg2 01:46 (gaps −2 min).
	cases := []struct {
		policy string
		starts []time.Duration // of segments 0, 1, 2 after simT0
		gaps   []float64       // seconds
	}{
		{provisioner.PolicyReactive, []time.Duration{0, 60 * time.Minute, 120 * time.Minute}, []float64{300, 300}},
		{provisioner.PolicyLead, []time.Duration{0, 50 * time.Minute, 100 * time.Minute}, []float64{-300, -300}},
		{provisioner.PolicyDependency, []time.Duration{0, 55 * time.Minute, 110 * time.Minute}, []float64{0, 0}},
		{provisioner.PolicyStartEstimate, []time.Duration{0, 50 * time.Minute, 100 * time.Minute}, []float64{-300, -300}},
		{provisioner.PolicyPin, []time.Duration{0, 53 * time.Minute, 106 * time.Minute}, []float64{-120, -120}},
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

// TestSimChainPinnedAheadOfLaterJobs: a pinned successor queues from the
// first decision, so a job another user submits later does not take its
// predecessor's nodes. Four nodes, three held by other users' 10 h jobs
// from 00:00; the chain's segment 0 runs 00:00–00:55 on the fourth; at
// 00:20 another user submits a 1-node 1 h job F (pending: no node free).
//
//	lead: seg1 submitted at 00:50, behind F; at 00:55 F takes the freed
//	      node (00:55–01:55), seg1 starts at 01:55: gap +60 min.
//	pin:  seg1 submitted at 00:10 pinned to seg0's node, ahead of F; it
//	      starts there at 00:55 (gap 0) and F at 01:50, when seg1 ends.
func TestSimChainPinnedAheadOfLaterJobs(t *testing.T) {
	cases := []struct {
		policy string
		start1 time.Duration
		gap    float64
		startF time.Duration
	}{
		{provisioner.PolicyLead, 115 * time.Minute, 3600, 55 * time.Minute},
		{provisioner.PolicyPin, 55 * time.Minute, 0, 110 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.policy, func(t *testing.T) {
			ctx := context.Background()
			s := newFourNodeSim(t)
			other := provisioner.SubmitRequest{Name: "other", Partition: "batch", TimeLimit: 10 * time.Hour, Nodes: 1, GPUs: 4}
			for range 3 {
				if _, err := s.Submit(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			var idF string
			ch, gaps, bySeg := runChainOn(t, s, c.policy, 2, func(now time.Time) {
				if now.Equal(simT0.Add(20 * time.Minute)) {
					f := other
					f.Name, f.TimeLimit = "F", time.Hour
					var err error
					if idF, err = s.Submit(ctx, f); err != nil {
						t.Error(err)
					}
				}
			})
			if ch.State != provisioner.ChainDone || len(bySeg[1]) != 1 {
				t.Fatalf("chain %s (%s), segment 1 jobs %d", ch.State, ch.Reason, len(bySeg[1]))
			}
			if got := bySeg[1][0].Start.Sub(simT0); got != c.start1 {
				t.Errorf("segment 1 started at +%s, want +%s", got, c.start1)
			}
			if fmt.Sprint(gaps) != fmt.Sprint([]float64{c.gap}) {
				t.Errorf("recorded gaps %v s, want [%v]", gaps, c.gap)
			}
			var startF time.Duration = -1
			for _, j := range s.History(simT0) {
				if j.ID == idF {
					startF = j.Start.Sub(simT0)
				}
			}
			if startF != c.startF {
				t.Errorf("F started at +%s, want +%s", startF, c.startF)
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

// TestSimChainUnpinAfterLostRace: a pinned successor whose predecessor's
// node goes to a job ahead of it is unpinned once the predecessor has
// ended, and starts on the next node to free. Four nodes: other users'
// jobs A1, A2 (10 h) and A3 (1 h 30) from 00:00, the chain's segment 0 on
// the fourth (00:00–00:55). At 00:10, before the daemon's cycle, another
// user submits F (1 node, 2 h); the cycle then pins segment 1 behind it
// (no node free). At 00:55 F, ahead in the queue, takes segment 0's node
// (00:55–02:55).
//
//	with Unpinner: the 01:00 cycle sees segment 0 ended and segment 1
//	               pending: unpin; A3's node frees at 01:30 and segment 1
//	               starts there (gap 35 min).
//	without:       no unpin is planned (the snapshots say the backend
//	               cannot) and segment 1 waits for its node until F ends
//	               at 02:55 (gap 2 h).
func TestSimChainUnpinAfterLostRace(t *testing.T) {
	cases := []struct {
		name    string
		cluster func(*sim.Sim) simBacked
		start1  time.Duration
		gap     float64
		unpin   provisioner.Action // the action of the unpin record ("": none)
	}{
		{"unpinner", func(s *sim.Sim) simBacked { return simCluster{s} }, 90 * time.Minute, 35 * 60, provisioner.ActUnpin},
		{"no unpinner", func(s *sim.Sim) simBacked { return noUnpin{s} }, 175 * time.Minute, 120 * 60, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s := newFourNodeSim(t)
			other := provisioner.SubmitRequest{Name: "other", Partition: "batch", TimeLimit: 10 * time.Hour, Nodes: 1, GPUs: 4}
			for _, limit := range []time.Duration{10 * time.Hour, 10 * time.Hour, 90 * time.Minute} {
				o := other
				o.TimeLimit = limit
				if _, err := s.Submit(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			ch, gaps, bySeg, recs := runChainWith(t, c.cluster(s), provisioner.PolicyPin, "", 2, func(now time.Time) {
				if now.Equal(simT0.Add(10 * time.Minute)) {
					f := other
					f.Name, f.TimeLimit = "F", 2*time.Hour
					if _, err := s.Submit(ctx, f); err != nil {
						t.Error(err)
					}
				}
			})
			if ch.State != provisioner.ChainDone || len(bySeg[1]) != 1 {
				t.Fatalf("chain %s (%s), segment 1 jobs %d", ch.State, ch.Reason, len(bySeg[1]))
			}
			s1 := bySeg[1][0]
			if got := s1.Start.Sub(simT0); got != c.start1 {
				t.Errorf("segment 1 started at +%s, want +%s", got, c.start1)
			}
			if fmt.Sprint(gaps) != fmt.Sprint([]float64{c.gap}) {
				t.Errorf("recorded gaps %v s, want [%v]", gaps, c.gap)
			}
			var pinned, unpin *provisioner.DecisionRecord
			unpins := 0
			for i := range recs {
				r := &recs[i]
				switch {
				case r.Action == provisioner.SubmitPinned:
					pinned = r
				case r.Segment == 1 && (r.Action == provisioner.ActUnpin || strings.HasPrefix(r.Error, "unpin job")):
					unpin = r
					unpins++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[c.unpin != ""]; unpins != want {
				t.Errorf("%d unpin records, want %d", unpins, want)
			}
			if pinned == nil || !pinned.Time.Equal(simT0.Add(10*time.Minute)) || !strings.Contains(pinned.Reason, "nodelist "+bySeg[0][0].NodeList[0]) {
				t.Errorf("pinned submission: %+v, want at +10m to segment 0's node %v", pinned, bySeg[0][0].NodeList)
			}
			if c.unpin != "" && (unpin == nil || unpin.Action != c.unpin || !unpin.Time.Equal(simT0.Add(time.Hour))) {
				t.Errorf("unpin record %+v, want %s at +1h", unpin, c.unpin)
			}
		})
	}
}

// keptSymmetric and keptWaiting are TestSimChainPinHeldToEnd's kept-pin reasons.
const (
	keptSymmetric = "kept the pin: the nodes of job sim-4 (n4) are next for job sim-5 when it ends; n3 is idle but started beside it, job sim-5 would overlap it to its limit, which the chain's cost prices no lower than the interruption it saves: wait"
	keptWaiting   = "kept the pin: the nodes of job sim-4 (n4) are next for job sim-5 when it ends; n3 is idle but jobs waiting for nodes are next for them: wait"
)

// TestSimChainPinHeldToEnd: under the published symmetric cost a pinned
// successor stays pinned while its predecessor runs, even when a whole
// node frees elsewhere within the lead (where pin, deciding afresh, would
// submit as lead); under a cost that prices an early start below an equal
// interruption (the training workload: 2.5/h against 60/h; a service's
// overlap within its 2 h budget: 0) the pin is lifted then, as the policy would submit unpinned. Four nodes: other
// users' jobs A1, A2 (10 h) and A3 (45 min) from 00:00, segment 0 on the
// fourth (00:00–00:55). At 00:10 no node is free: segment 1 is pinned to
// segment 0's node. A3's node is free from 00:45, within the lead (10 min)
// of segment 0's end. Symmetric: nothing lifts the pin, and segment 1
// starts at 00:55 on segment 0's node (gap 0). Training, service: at the 00:50
// cycle the pin is lifted, at once (no begin time: the pinned job keeps its
// queue time), and segment 1 starts at 00:50 on A3's node (gap −5 min).
//
// With a job waiting for nodes: another user submits H (2 nodes, 10 h) at
// 00:20, when no node is free; it still waits at 00:50 (one node free),
// so A3's node is not spare. The service's pin then holds as under the
// symmetric cost (segment 1 starts at 00:55 on segment 0's node); the
// training chain, which hands off, lifts it at 00:50 all the same.
//
// Where the pin holds, the 00:50 cycle says so in the log, once (#51): A3's
// node n3 is idle, segment 0 (job sim-4) runs on n4, segment 1 (sim-5)
// is pinned there; why it is not moved to n3 is the cost (symmetric) or
// H, which waits for nodes (service). At 00:40 no node was idle (A3
// ran), so there was nothing to keep the pin against.
func TestSimChainPinHeldToEnd(t *testing.T) {
	cases := []struct {
		workload string
		waiting  bool // H waits for nodes from 00:20
		start1   time.Duration
		onPred   bool // segment 1 ran on segment 0's node
		gaps     string
		actions  string
		kept     []string // the waits that say why the pin held while a node was idle
	}{
		{"", false, 55 * time.Minute, true, "[0]", "[submit-pinned@+10m0s]", []string{"+50m0s×1 " + keptSymmetric}},
		{provisioner.WorkloadTraining, false, 50 * time.Minute, false, "[-300]", "[submit-pinned@+10m0s unpin@+50m0s]", nil},
		{provisioner.WorkloadService, false, 50 * time.Minute, false, "[-300]", "[submit-pinned@+10m0s unpin@+50m0s]", nil}, // overlap within its 2 h budget costs nothing
		{provisioner.WorkloadService, true, 55 * time.Minute, true, "[0]", "[submit-pinned@+10m0s]", []string{"+50m0s×1 " + keptWaiting}},
		{provisioner.WorkloadTraining, true, 50 * time.Minute, false, "[-300]", "[submit-pinned@+10m0s unpin@+50m0s]", nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("workload=%s/waiting=%v", c.workload, c.waiting), func(t *testing.T) {
			ctx := context.Background()
			s := newFourNodeSim(t)
			for _, limit := range []time.Duration{10 * time.Hour, 10 * time.Hour, 45 * time.Minute} {
				if _, err := s.Submit(ctx, provisioner.SubmitRequest{Name: "other", Partition: "batch", TimeLimit: limit, Nodes: 1, GPUs: 4}); err != nil {
					t.Fatal(err)
				}
			}
			var h string
			ch, gaps, bySeg, recs := runChainWith(t, simCluster{s}, provisioner.PolicyPin, c.workload, 2, func(now time.Time) { // (other users' jobs: not the chain's)
				if c.waiting && now.Equal(simT0.Add(20*time.Minute)) {
					var err error
					if h, err = s.Submit(ctx, provisioner.SubmitRequest{Name: "H", Partition: "batch", TimeLimit: 10 * time.Hour, Nodes: 2, GPUs: 8}); err != nil {
						t.Error(err)
					}
				}
				if h != "" && now.Equal(simT0.Add(50*time.Minute)) {
					snap, err := s.Snapshot(ctx)
					if err != nil {
						t.Fatal(err)
					}
					idle := 0
					for _, n := range snap.Nodes {
						if n.GPUsUsed == 0 {
							idle++
						}
					}
					i := slices.IndexFunc(snap.Jobs, func(j provisioner.Job) bool { return j.ID == h })
					if idle != 1 || i < 0 || snap.Jobs[i].State != provisioner.StatePending {
						t.Errorf("at 00:50: %d idle nodes, H %v; want one idle node and H waiting", idle, i >= 0 && snap.Jobs[i].State == provisioner.StatePending)
					}
				}
			})
			if ch.State != provisioner.ChainDone || len(bySeg[1]) != 1 {
				t.Fatalf("chain %s (%s), segment 1 jobs %d", ch.State, ch.Reason, len(bySeg[1]))
			}
			if got := bySeg[1][0].Start.Sub(simT0); got != c.start1 {
				t.Errorf("segment 1 started at +%s, want +%s", got, c.start1)
			}
			if got := fmt.Sprint(bySeg[1][0].NodeList) == fmt.Sprint(bySeg[0][0].NodeList); got != c.onPred {
				t.Errorf("segment 1 ran on %v, segment 0 on %v: same nodes %v, want %v", bySeg[1][0].NodeList, bySeg[0][0].NodeList, got, c.onPred)
			}
			if fmt.Sprint(gaps) != c.gaps {
				t.Errorf("recorded gaps %v s, want %s", gaps, c.gaps)
			}
			var actions []string
			for _, r := range recs {
				if r.Segment == 1 && r.Action != provisioner.Wait {
					actions = append(actions, fmt.Sprintf("%s@+%s", r.Action, r.Time.Sub(simT0)))
				}
			}
			if fmt.Sprint(actions) != c.actions {
				t.Errorf("segment 1's decisions %v, want %s", actions, c.actions)
			}
			var kept []string
			for _, r := range recs {
				if r.Segment == 1 && r.Action == provisioner.Wait && strings.HasPrefix(r.Reason, "kept the pin:") {
					kept = append(kept, fmt.Sprintf("+%s×%d %s", r.Time.Sub(simT0), max(r.Count, 1), r.Reason))
				}
			}
			if want := c.kept; fmt.Sprint(kept) != fmt.Sprint(want) {
				t.Errorf("kept-pin decisions %q, want %q", kept, want)
			}
		})
	}
}

// TestSimChainShortLimit: leads scale with the segment limit. Empty 4-node
// cluster, limit 12 min, every segment uses it (TIMEOUT), the daemon every
// minute. The lead is min(10 min, 12/4) = 3 min: lead point 00:09.
//
//	lead:           submitted at 00:09, starts at once: seg1 00:09–00:21, seg2 00:18 (gaps −3 min);
//	                with the fixed 10-min lead it was 00:02 (−10 min), after 2 minutes of segment 0
//	pin, training:  as lead (nodes free, no begin time: it hands off): the same
//	pin:            as lead, in the last cycle with --begin 2 min before the limit: seg1 at 00:10,
//	                seg2 at 00:20 (gaps −2 min)
//	start-estimate: nothing pending, segment 0 waited 0 s: W = 0; submit once the remaining time
//	                ≤ the slack, min(10 min, 3 min): at 00:09, as lead.
func TestSimChainShortLimit(t *testing.T) {
	cases := []struct {
		policy, workload string
		starts           []time.Duration
		gaps             string
	}{
		{provisioner.PolicyLead, "", []time.Duration{0, 9 * time.Minute, 18 * time.Minute}, "[-180 -180]"},
		{provisioner.PolicyPin, provisioner.WorkloadTraining, []time.Duration{0, 9 * time.Minute, 18 * time.Minute}, "[-180 -180]"},
		{provisioner.PolicyPin, "", []time.Duration{0, 10 * time.Minute, 20 * time.Minute}, "[-120 -120]"},
		{provisioner.PolicyStartEstimate, "", []time.Duration{0, 9 * time.Minute, 18 * time.Minute}, "[-180 -180]"},
	}
	for _, c := range cases {
		t.Run(c.policy+"/"+c.workload, func(t *testing.T) {
			ch, gaps, bySeg, _ := runChainSpec(t, simCluster{newFourNodeSim(t)}, simRun{policy: c.policy, workload: c.workload, segments: 3,
				limit: 12 * time.Minute, cycle: time.Minute, horizon: time.Hour})
			if ch.State != provisioner.ChainDone || len(bySeg) != 3 {
				t.Fatalf("chain %s (%s), %d segments run; want done after 3", ch.State, ch.Reason, len(bySeg))
			}
			for i, want := range c.starts {
				if js := bySeg[i]; len(js) != 1 || js[0].Start.Sub(simT0) != want {
					t.Errorf("segment %d: jobs %v, want one starting at +%s", i, js, want)
				}
			}
			if fmt.Sprint(gaps) != c.gaps {
				t.Errorf("recorded gaps %v s, want %s", gaps, c.gaps)
			}
		})
	}
}

// submitNow is a policy that always submits at once (a model that wants
// the successor to start now).
type submitNow struct{}

func (submitNow) Name() string { return "now" }
func (submitNow) Decide(*provisioner.Observation) (provisioner.Decision, error) {
	return provisioner.Decision{Action: provisioner.SubmitNow, Reason: "the model says now"}, nil
}

// TestSimChainUnpinWaitsMinRun: a pin is not lifted before its predecessor
// has run half its limit (MinRun), however early a node frees and the
// policy asks for it. Four nodes: other users' A1, A2 (10 h) and A3 (2 min
// 30 s) from 00:00, segment 0 on the fourth (limit 12 min, 00:00–00:12),
// the daemon every minute, a training chain (an early start costs a
// checkpoint) under now-pin (pin whose inner policy always submits). At
// 00:01 no node is free: segment 1 is pinned to segment 0's node. A3's
// node frees at 00:02:30; from 00:03 the policy would lift the pin, but
// segment 0 has run less than 6 min: the pin is lifted at 00:06 and
// segment 1 starts then on A3's node (gap 00:06 − 00:12 = −6 min). Without
// the floor it started at 00:03.
func TestSimChainUnpinWaitsMinRun(t *testing.T) {
	ctx := context.Background()
	s := newFourNodeSim(t)
	for _, limit := range []time.Duration{10 * time.Hour, 10 * time.Hour, 150 * time.Second} {
		if _, err := s.Submit(ctx, provisioner.SubmitRequest{Name: "other", Partition: "batch", TimeLimit: limit, Nodes: 1, GPUs: 4}); err != nil {
			t.Fatal(err)
		}
	}
	policies := func(name string) (provisioner.Policy, error) {
		if name == "now-pin" {
			return provisioner.Pinned("now-pin", submitNow{}), nil
		}
		return provisioner.BaselinePolicy(name)
	}
	ch, gaps, bySeg, recs := runChainSpec(t, simCluster{s}, simRun{policy: "now-pin", workload: provisioner.WorkloadTraining, segments: 2,
		limit: 12 * time.Minute, cycle: time.Minute, horizon: time.Hour, policies: policies, at: func(time.Time) {}})
	if ch.State != provisioner.ChainDone || len(bySeg[1]) != 1 {
		t.Fatalf("chain %s (%s), segment 1 jobs %d", ch.State, ch.Reason, len(bySeg[1]))
	}
	if got := bySeg[1][0].Start.Sub(simT0); got != 6*time.Minute {
		t.Errorf("segment 1 started at +%s, want +6m0s", got)
	}
	if fmt.Sprint(gaps) != "[-360]" {
		t.Errorf("recorded gaps %v s, want [-360]", gaps)
	}
	var actions []string
	for _, r := range recs {
		if r.Segment == 1 && r.Action != provisioner.Wait {
			actions = append(actions, fmt.Sprintf("%s@+%s", r.Action, r.Time.Sub(simT0)))
		}
	}
	if fmt.Sprint(actions) != "[submit-pinned@+1m0s unpin@+6m0s]" {
		t.Errorf("segment 1's decisions %v, want [submit-pinned@+1m0s unpin@+6m0s]", actions)
	}
}
