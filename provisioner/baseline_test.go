package provisioner

// Tests of the baseline policies. Step and the Engine are told as stories
// in testdata/step (step_script_test.go).

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

func min_(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

// jb is a small job builder.
type jb struct{ j Job }

func job(id string) *jb              { return &jb{Job{ID: id, State: StatePending, Nodes: 1, TimeLimit: time.Hour}} }
func (b *jb) state(s JobState) *jb   { b.j.State = s; return b }
func (b *jb) submit(t time.Time) *jb { b.j.Submit = t; return b }
func (b *jb) start(t time.Time) *jb  { b.j.Start = t; return b }
func (b *jb) est(t time.Time) *jb    { b.j.EstStart = t; return b }
func (b *jb) shape(n, g int) *jb     { b.j.Nodes, b.j.GPUs = n, g; return b }
func (b *jb) partition(p string) *jb { b.j.Partition = p; return b }
func (b *jb) build() Job             { return b.j }
func jobs(bs ...*jb) (out []Job) {
	for _, b := range bs {
		out = append(out, b.j)
	}
	return
}
func chain(policy string, n, retries int) Chain {
	return Chain{ID: "c1", Name: "train", Script: "/home/u/train.sbatch", Policy: policy, Segments: n, MaxRetries: retries,
		Partition: "gpu", TimeLimit: time.Hour, Nodes: 1, GPUs: 4, State: ChainActive, Created: t0}
}

func TestStartEstimate(t *testing.T) {
	p, err := BaselinePolicy(PolicyStartEstimate)
	if err != nil {
		t.Fatal(err)
	}
	pred := job("10").state(StateRunning).start(t0).build() // limit end 09:00
	succ := SubmitRequest{Partition: "gpu", Nodes: 1, GPUs: 4}
	cases := []struct {
		name    string
		now     time.Time
		live    []Job
		history []Job
		want    Action
		score   float64
	}{
		// now 08:25, R = 35 min; estimate 08:55 → W = 30 min ≥ R − 10 = 25: submit; score W − R = −300 s.
		{"scheduler estimate covers the remaining time", min_(25),
			jobs(job("20").shape(1, 4).partition("gpu").est(min_(55)), job("21").shape(2, 8).partition("gpu").est(min_(200))), nil, SubmitNow, -300},
		// estimate 08:45 → W = 20 min < 25: wait; score −900 s.
		{"scheduler estimate too early", min_(25), jobs(job("20").shape(1, 4).partition("gpu").est(min_(45))), nil, Wait, -900},
		// no successor-shaped estimate; waits 10, 20, 40 min → median 20 min; R at 08:35 = 25 min; 20 ≥ 15: submit; score −300.
		{"median of recent waits", min_(35), nil, jobs(
			job("1").submit(min_(-10)).start(t0), job("2").submit(min_(-20)).start(t0), job("3").submit(min_(-40)).start(t0)), SubmitNow, -300},
		// same waits at 08:25: R = 35, 20 < 25: wait.
		{"median of recent waits, too early", min_(25), nil, jobs(
			job("1").submit(min_(-10)).start(t0), job("2").submit(min_(-20)).start(t0), job("3").submit(min_(-40)).start(t0)), Wait, -900},
		// nothing known: W = 0: submit once R ≤ 10 min (08:50).
		{"no information before the slack", min_(49), nil, nil, Wait, -660},
		{"no information at the slack", min_(50), nil, nil, SubmitNow, -600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := pred
			d, err := p.Decide(&Observation{Now: c.now, Snapshot: &Snapshot{Jobs: c.live}, History: c.history, Predecessor: &pr, Successor: succ})
			if err != nil || d.Action != c.want || d.Score != c.score {
				t.Errorf("got %s (score %v, %q), %v; want %s (score %v)", d.Action, d.Score, d.Reason, err, c.want, c.score)
			}
		})
	}
}

func TestBaselineCommonRules(t *testing.T) {
	for _, name := range BaselineNames() {
		p, err := BaselinePolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		ended := job("1").state(StateTimeout).build()
		if d, _ := p.Decide(&Observation{Now: t0, Predecessor: &ended}); d.Action != SubmitNow {
			t.Errorf("%s with an ended predecessor: %s", name, d.Action)
		}
		pending := job("1").build()
		if d, _ := p.Decide(&Observation{Now: t0, Predecessor: &pending}); d.Action != Wait {
			t.Errorf("%s with a pending predecessor: %s, want wait", name, d.Action)
		}
	}
	if _, err := BaselinePolicy("xgb"); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := BaselinePolicy(PolicyLead, WithLead(-time.Minute)); err == nil {
		t.Error("negative lead accepted")
	}
	// The published reactive variant: lead 1 minute. Limit end 09:00: wait at 08:58, submit at 08:59.
	p, _ := BaselinePolicy(PolicyLead, WithLead(time.Minute))
	run := job("1").state(StateRunning).start(t0).build()
	if d, _ := p.Decide(&Observation{Now: min_(58), Predecessor: &run}); d.Action != Wait {
		t.Errorf("lead 1m at 08:58: %s", d.Action)
	}
	if d, _ := p.Decide(&Observation{Now: min_(59), Predecessor: &run}); d.Action != SubmitNow {
		t.Errorf("lead 1m at 08:59: %s", d.Action)
	}
}

// TestReasonsToTheSecond: durations in reasons and views are printed to
// the second, however precise the clock.
func TestReasonsToTheSecond(t *testing.T) {
	p, _ := BaselinePolicy(PolicyLead, WithLead(10*time.Minute))
	run := job("1").state(StateRunning).start(t0).build() // limit end 09:00
	// 08:20:00.456789: 29m59.543211s to the lead point 08:50, printed 30m0s.
	now := min_(20).Add(456789 * time.Microsecond)
	if d, _ := p.Decide(&Observation{Now: now, Predecessor: &run}); d.Action != Wait || !strings.HasSuffix(d.Reason, "(in 30m0s)") {
		t.Errorf("lead at %s: %s %q, want wait (in 30m0s)", now.Format("15:04:05.000000"), d.Action, d.Reason)
	}
}

// TestPin: pin's decision while its predecessor (on n1, limit end 09:00)
// runs, by which nodes are free and how much time is left (lead 10 min).
func TestPin(t *testing.T) {
	p, err := BaselinePolicy(PolicyPin)
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string, gpus, used int) Node {
		return Node{Name: name, State: NodeUp, CPUs: 8, GPUs: gpus, GPUsUsed: used, Partitions: []string{"gpu"}}
	}
	busy := []Node{node("n1", 4, 4), node("n2", 4, 4), node("n3", 4, 2)}    // n3 half used: not a whole free node
	oneFree := []Node{node("n1", 4, 4), node("n2", 4, 0), node("n3", 4, 4)} // n2 idle
	shared := []Node{node("n1", 8, 4), node("n2", 8, 8)}                    // 4 GPUs free beside the predecessor on n1
	succ := SubmitRequest{Partition: "gpu", Nodes: 1, GPUs: 4}
	cases := []struct {
		name  string
		now   time.Time
		nodes []Node
		list  []string // the predecessor's nodes
		want  Action
		begin int // Decision.Begin, minutes after t0 (0: none)
	}{
		{"no whole node free: pin at once", min_(10), busy, []string{"n1"}, SubmitPinned, 0},
		{"no whole node free, 5 min left: still pinned", min_(55), busy, []string{"n1"}, SubmitPinned, 0},
		{"a node free, 50 min left: wait as lead", min_(10), oneFree, []string{"n1"}, Wait, 0},
		// The limit is at 60 min: in the last cycle (10 min) a submission
		// is timed to start BeginMargin (2 min) before it, at 58 min.
		{"a node free within the lead: submit unpinned, to begin at 58 min", min_(50), oneFree, []string{"n1"}, SubmitNow, 58},
		{"a node free, 1 min left: submit unpinned at once", min_(59), oneFree, []string{"n1"}, SubmitNow, 0},
		{"its nodes not known yet", min_(10), busy, nil, Wait, 0},
		{"it would fit beside its predecessor: lead, waiting", min_(10), shared, []string{"n1"}, Wait, 0},
		{"it would fit beside its predecessor: lead, within the lead", min_(51), shared, []string{"n1"}, SubmitNow, 58},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pred := job("10").state(StateRunning).start(t0).shape(1, 4).partition("gpu").build()
			pred.NodeList = c.list
			d, err := p.Decide(&Observation{Now: c.now, Predecessor: &pred, Successor: succ, Snapshot: &Snapshot{Time: c.now, Nodes: c.nodes}})
			if err != nil || d.Action != c.want {
				t.Errorf("%s (%v), want %s: %s", d.Action, err, c.want, d.Reason)
			}
			if want := min_(c.begin); c.begin == 0 && !d.Begin.IsZero() || c.begin > 0 && !d.Begin.Equal(want) {
				t.Errorf("begin %s, want %d min after t0 (0: none): %s", d.Begin, c.begin, d.Reason)
			}
		})
	}
	// A training chain hands off: its successor, within the lead with a
	// node free, is submitted to start at once.
	pred := job("10").state(StateRunning).start(t0).shape(1, 4).partition("gpu").build()
	pred.NodeList = []string{"n1"}
	d, err := p.Decide(&Observation{Now: min_(50), Chain: &Chain{Workload: WorkloadTraining}, Predecessor: &pred, Successor: succ, Snapshot: &Snapshot{Time: min_(50), Nodes: oneFree}})
	if err != nil || d.Action != SubmitNow || !d.Begin.IsZero() {
		t.Errorf("training chain, a node free within the lead: %s, begin %s (%v); want submit at once: %s", d.Action, d.Begin, err, d.Reason)
	}
}

// askedPolicy is an inner policy that always submits and counts the times
// it was asked; it says it learns from hand-offs.
type askedPolicy struct{ asked *int }

func (askedPolicy) Name() string             { return "inner" }
func (askedPolicy) LearnsFromHandOffs() bool { return true }
func (a askedPolicy) Decide(*Observation) (Decision, error) {
	*a.asked++
	return Decision{Action: SubmitNow, Reason: "inner says submit"}, nil
}

// TestPinnedAsksInner: Pinned(name, inner) asks inner exactly where pin
// acts as lead (a whole node free, or room beside the predecessor) and
// nowhere else (no node free: pinned, without asking; nodes unknown: wait;
// predecessor ended or pending: the shared rules), keeps inner's action,
// and learns from hand-offs as inner does.
func TestPinnedAsksInner(t *testing.T) {
	asked := 0
	p := Pinned("inner-pin", askedPolicy{&asked})
	if p.Name() != "inner-pin" || !LearnsFromHandOffs(p) {
		t.Errorf("name %q, learns %v: want inner-pin, true", p.Name(), LearnsFromHandOffs(p))
	}
	node := func(name string, gpus, used int) Node {
		return Node{Name: name, State: NodeUp, CPUs: 8, GPUs: gpus, GPUsUsed: used, Partitions: []string{"gpu"}}
	}
	busy := []Node{node("n1", 4, 4), node("n2", 4, 4)}
	oneFree := []Node{node("n1", 4, 4), node("n2", 4, 0)}
	shared := []Node{node("n1", 8, 4), node("n2", 8, 8)}
	succ := SubmitRequest{Partition: "gpu", Nodes: 1, GPUs: 4}
	for _, c := range []struct {
		name  string
		state JobState
		nodes []Node
		list  []string
		want  Action
		asks  int
	}{
		{"no whole node free: pinned", StateRunning, busy, []string{"n1"}, SubmitPinned, 0},
		{"its nodes not known: wait", StateRunning, busy, nil, Wait, 0},
		{"a node free: inner", StateRunning, oneFree, []string{"n1"}, SubmitNow, 1},
		{"room beside the predecessor: inner", StateRunning, shared, []string{"n1"}, SubmitNow, 1},
		{"predecessor pending: wait", StatePending, oneFree, []string{"n1"}, Wait, 0},
	} {
		asked = 0
		pred := job("10").state(c.state).start(t0).shape(1, 4).partition("gpu").build()
		pred.NodeList = c.list
		d, err := p.Decide(&Observation{Now: min_(10), Predecessor: &pred, Successor: succ, Snapshot: &Snapshot{Time: min_(10), Nodes: c.nodes}})
		if err != nil || d.Action != c.want || asked != c.asks {
			t.Errorf("%s: %s (%v), inner asked %d times; want %s, asked %d: %s", c.name, d.Action, err, asked, c.want, c.asks, d.Reason)
		}
		if !d.Begin.IsZero() {
			t.Errorf("%s: begin %s 50 min before the limit, want none (only in the last cycle)", c.name, d.Begin)
		}
		if c.asks > 0 && !strings.HasSuffix(d.Reason, "inner says submit") {
			t.Errorf("%s: reason %q does not carry inner's", c.name, d.Reason)
		}
	}
}

func TestGPUsPerNode(t *testing.T) {
	for _, c := range []struct{ gpus, nodes, want int }{
		{8, 1, 8},  // one node
		{16, 2, 8}, // spread evenly
		{3, 2, 2},  // rounded up: one node carries 2
		{4, 0, 4},  // nodes unset means one
		{0, 2, 0},  // no GPUs
	} {
		r := SubmitRequest{GPUs: c.gpus, Nodes: c.nodes}
		if got := r.GPUsPerNode(); got != c.want {
			t.Errorf("%d GPUs on %d nodes: %d per node, want %d", c.gpus, c.nodes, got, c.want)
		}
	}
}

// TestSpareNodes: three whole nodes free in partition gpu (n4 half used,
// n5 in another partition); the jobs waiting for nodes take what they
// could of them, counted by hand.
func TestSpareNodes(t *testing.T) {
	node := func(name, part string, used int) Node {
		return Node{Name: name, State: NodeUp, CPUs: 8, GPUs: 4, GPUsUsed: used, Partitions: []string{part}}
	}
	nodes := []Node{node("n1", "gpu", 0), node("n2", "gpu", 0), node("n3", "gpu", 0), node("n4", "gpu", 2), node("n5", "cpu", 0)}
	pend := func(id, part, reason string, n int) Job {
		return Job{ID: id, Partition: part, State: StatePending, Reason: reason, Nodes: n}
	}
	req := SubmitRequest{Partition: "gpu", Nodes: 1, GPUs: 4}
	cases := []struct {
		name string
		jobs []Job
		want int
	}{
		{"nothing waits", nil, 3},
		{"own pinned job (excluded)", []Job{pend("own", "gpu", "Priority", 1)}, 3},
		{"one 1-node job waits", []Job{pend("a", "gpu", "Priority", 1)}, 2},
		{"a 2-node job waits for resources", []Job{pend("a", "gpu", "Resources", 2)}, 1},
		{"an 8-node job would take all three", []Job{pend("a", "gpu", "Resources", 8)}, 0},
		{"not waiting for nodes, or elsewhere", []Job{pend("a", "gpu", "Dependency", 1), pend("b", "gpu", "BeginTime", 1), pend("c", "cpu", "Priority", 1),
			{ID: "d", Partition: "gpu", State: StateRunning, Nodes: 1}}, 3},
		{"two jobs, 1 + 1 nodes", []Job{pend("a", "gpu", "Priority", 1), pend("b", "gpu", "Priority", 1)}, 1},
		{"a 2-node job just submitted (None: not looked at yet)", []Job{pend("a", "gpu", "None", 2)}, 1},
		{"a job without a reason (a backend that gives none)", []Job{pend("a", "gpu", "", 2)}, 3},
	}
	for _, c := range cases {
		if got := spareNodes(&Snapshot{Nodes: nodes, Jobs: c.jobs}, &req, "own"); got != c.want {
			t.Errorf("%s: %d spare, want %d", c.name, got, c.want)
		}
	}
	if got := spareNodes(nil, &req, "own"); got != 0 {
		t.Errorf("no snapshot: %d spare, want 0", got)
	}
}

// TestScaledLead: a lead is at most a quarter of the predecessor's limit,
// unbounded when the limit is unknown; a predecessor runs half its limit
// before it is stopped for a hand-off. Worked by hand.
func TestScaledLead(t *testing.T) {
	for _, c := range []struct{ lead, limit, want time.Duration }{
		{DefaultLead, 3 * time.Minute, 45 * time.Second}, // issue #51's 3-minute segments
		{DefaultLead, 12 * time.Minute, 3 * time.Minute},
		{DefaultLead, 40 * time.Minute, DefaultLead}, // from 40 min on, the default holds
		{DefaultLead, 48 * time.Hour, DefaultLead},   // the published protocol
		{time.Minute, 2 * time.Minute, 30 * time.Second},
		{DefaultLead, 0, DefaultLead}, // limit unknown
	} {
		if got := ScaledLead(c.lead, c.limit); got != c.want {
			t.Errorf("ScaledLead(%s, %s) = %s, want %s", c.lead, c.limit, got, c.want)
		}
	}
	for _, c := range []struct{ limit, want time.Duration }{{3 * time.Minute, 90 * time.Second}, {48 * time.Hour, 24 * time.Hour}, {0, 0}, {-time.Minute, 0}} {
		if got := MinRun(c.limit); got != c.want {
			t.Errorf("MinRun(%s) = %s, want %s", c.limit, got, c.want)
		}
	}
}

// TestLeadScalesWithLimit: the baselines' leads on a predecessor with a
// 3-minute limit that started at t0 (its limit at 3:00). lead and pin (a
// node free: as lead) submit from 3:00 − 45 s = 2:15, not at once;
// start-estimate (nothing pending, no history: W = 0) once the remaining
// time ≤ its slack, 45 s: from 2:15 too. With a 1-hour limit nothing
// changes: lead submits from 50:00.
func TestLeadScalesWithLimit(t *testing.T) {
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	free := []Node{{Name: "n1", State: NodeUp, CPUs: 8, GPUs: 4, GPUsUsed: 4, Partitions: []string{"gpu"}}, {Name: "n2", State: NodeUp, CPUs: 8, GPUs: 4, Partitions: []string{"gpu"}}}
	succ := SubmitRequest{Partition: "gpu", Nodes: 1, GPUs: 4}
	for _, c := range []struct {
		policy string
		limit  time.Duration
		now    time.Time
		want   Action
	}{
		{PolicyLead, 3 * time.Minute, sec(30), Wait}, // the fixed 10-min lead submitted here
		{PolicyLead, 3 * time.Minute, sec(134), Wait},
		{PolicyLead, 3 * time.Minute, sec(135), SubmitNow},
		{PolicyPin, 3 * time.Minute, sec(30), Wait},
		{PolicyPin, 3 * time.Minute, sec(135), SubmitNow},
		{PolicyStartEstimate, 3 * time.Minute, sec(134), Wait},
		{PolicyStartEstimate, 3 * time.Minute, sec(135), SubmitNow},
		{PolicyLead, time.Hour, min_(49), Wait},
		{PolicyLead, time.Hour, min_(50), SubmitNow},
	} {
		p, err := BaselinePolicy(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		pred := job("10").state(StateRunning).start(t0).shape(1, 4).partition("gpu").build()
		pred.TimeLimit, pred.NodeList = c.limit, []string{"n1"}
		d, err := p.Decide(&Observation{Now: c.now, Predecessor: &pred, Successor: succ, Snapshot: &Snapshot{Time: c.now, Nodes: free}})
		if err != nil || d.Action != c.want {
			t.Errorf("%s, limit %s, at +%s: %s (%v), want %s: %s", c.policy, c.limit, c.now.Sub(t0), d.Action, err, c.want, d.Reason)
		}
		if c.limit < 40*time.Minute && !strings.Contains(d.Reason, "45s (10m0s bounded by a quarter of the limit)") {
			t.Errorf("%s, limit %s: reason %q does not say the lead was bounded", c.policy, c.limit, d.Reason)
		}
	}
	// A lead given (WithLead) is used as given: 10 min ahead of a 3-minute
	// limit is at once.
	p, _ := BaselinePolicy(PolicyLead, WithLead(DefaultLead))
	pred := job("10").state(StateRunning).start(t0).build()
	pred.TimeLimit = 3 * time.Minute
	if d, err := p.Decide(&Observation{Now: sec(30), Predecessor: &pred}); err != nil || d.Action != SubmitNow {
		t.Errorf("WithLead(10m), limit 3m, at +30s: %s (%v), want submit: %s", d.Action, err, d.Reason)
	}
}

// TestPinQueuesWhenFreeNodesAreWaitedFor: pin at +10 min of a 1-hour
// predecessor on n1 (limit at 60:00, so lead would submit from 50:00),
// n2 whole and free. Nobody waits for n2: it need not queue yet (as
// lead: wait). A 2-node job of another user waits for nodes (or was just
// submitted: reason None, its first pass to come): n2 is the
// scheduler's to give to it, and a successor left to queue later would
// queue behind it: submit pinned to n1 now. The successor's own pending
// job (tagged with its chain and segment) does not wait against itself;
// and a chain that hands off counts the free node as its own (its
// predecessor gives its nodes back a checkpoint after it starts).
func TestPinQueuesWhenFreeNodesAreWaitedFor(t *testing.T) {
	nodes := []Node{{Name: "n1", State: NodeUp, CPUs: 8, GPUs: 4, GPUsUsed: 4, Partitions: []string{"gpu"}}, {Name: "n2", State: NodeUp, CPUs: 8, GPUs: 4, Partitions: []string{"gpu"}}}
	ch := &Chain{ID: "c-1"}
	succ := SubmitRequest{Partition: "gpu", Nodes: 1, GPUs: 4, Comment: Tag{Chain: "c-1", Segment: 1}.String()}
	other := Job{ID: "20", User: "bob", Partition: "gpu", State: StatePending, Reason: PendingResources, Nodes: 2}
	fresh := other
	fresh.Reason = PendingNone
	own := Job{ID: "11", Partition: "gpu", State: StatePending, Reason: PendingPriority, Nodes: 1, Comment: Tag{Chain: "c-1", Segment: 1}.String() + " mirage-spec=x"}
	p, err := BaselinePolicy(PolicyPin)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		jobs     []Job
		workload string
		want     Action
		reason   string
	}{
		{"nobody waits", nil, "", Wait, "1 node(s) free and no job waits for them: no need to queue pinned"},
		{"a job waits for nodes", []Job{other}, "", SubmitPinned, "1 node(s) free but jobs wait for them"},
		{"a job just submitted, not looked at yet", []Job{fresh}, "", SubmitPinned, "1 node(s) free but jobs wait for them"},
		{"only its own pending job", []Job{own}, "", Wait, "no need to queue pinned"},
		{"a job waits, the chain hands off", []Job{other}, WorkloadTraining, Wait, "no need to queue pinned"},
	} {
		pred := job("10").state(StateRunning).start(t0).shape(1, 4).partition("gpu").build()
		pred.TimeLimit, pred.NodeList = time.Hour, []string{"n1"}
		ch.Workload = c.workload
		d, err := p.Decide(&Observation{Now: min_(10), Chain: ch, Predecessor: &pred, Successor: succ, Snapshot: &Snapshot{Time: min_(10), Nodes: nodes, Jobs: append([]Job{pred}, c.jobs...)}})
		if err != nil || d.Action != c.want || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: %s (%v), want %s: %s", c.name, d.Action, err, c.want, d.Reason)
		}
	}
}
