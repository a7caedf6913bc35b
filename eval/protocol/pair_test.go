package protocol

import (
	"context"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

var (
	testScOnce sync.Once
	testSc     *scenario.Scenario
	testScErr  error
)

// testScenario: 12 days of synthetic LS6-like jobs on 40 LS6 nodes (so chains queue).
func testScenario(t testing.TB) *scenario.Scenario {
	t.Helper()
	testScOnce.Do(func() {
		jobs, err := traces.Synth("ls6", 12, 5)
		if err != nil {
			testScErr = err
			return
		}
		cfg := sim.LS6()
		cfg.Nodes = cfg.Nodes[:40]
		testSc, testScErr = scenario.NewScenario("synth-ls6", jobs, cfg)
	})
	if testScErr != nil {
		t.Fatal(testScErr)
	}
	return testSc
}

func testProtocol() scenario.Protocol {
	return scenario.Protocol{Every: 12 * time.Hour, Tick: 30 * time.Minute, Limit: 12 * time.Hour, Nodes: []int{1, 4}}
}

// testFieldRule submits when one feature reaches a threshold: it decides
// from the features of the observation only, as a learned policy does.
type testFieldRule struct {
	field int
	th    float64
}

func (r testFieldRule) Name() string { return "field-rule" }
func (r testFieldRule) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	if obs.Predecessor == nil || obs.Predecessor.State != provisioner.StateRunning {
		return provisioner.Decision{Action: provisioner.SubmitNow}, nil
	}
	x, err := features.Features(obs)
	if err != nil {
		return provisioner.Decision{}, err
	}
	if x[r.field] >= r.th {
		return provisioner.Decision{Action: provisioner.SubmitNow}, nil
	}
	return provisioner.Decision{Action: provisioner.Wait}, nil
}

// testWaitAlways never submits: the deadline submission (the reactive baseline).
type testWaitAlways struct{}

func (testWaitAlways) Name() string { return "reactive" }
func (testWaitAlways) Decide(*provisioner.Observation) (provisioner.Decision, error) {
	return provisioner.Decision{Action: provisioner.Wait}, nil
}

func testFactory(rule testFieldRule) func(models.OracleProbe) provisioner.PolicyFactory {
	return func(probe models.OracleProbe) provisioner.PolicyFactory {
		f := models.PolicyFactory("", models.PolicyOptions{Probe: probe, Tick: 30 * time.Minute})
		return func(name string) (provisioner.Policy, error) {
			switch name {
			case "field-rule":
				return rule, nil
			case "reactive":
				return testWaitAlways{}, nil
			}
			return f(name)
		}
	}
}

func fieldIndex(t *testing.T, name string) int {
	for i, f := range features.Schema().Fields {
		if f == name {
			return i
		}
	}
	t.Fatalf("no field %s", name)
	return -1
}

// TestRunPairsMatchesDatasetTables: a policy driven through the harness
// gets exactly the gap the dataset's probe tables give for the first tick
// its rule fires on the dataset's features (the same observation path, the
// same simulator states), and reactive gets the tables' deadline gap.
func TestRunPairsMatchesDatasetTables(t *testing.T) {
	sc := testScenario(t)
	from, until := sc.First.Add(3*24*time.Hour), sc.First.Add(6*24*time.Hour)
	data, err := dataset.GenerateChainData(context.Background(), sc, dataset.GenOptions{Protocol: testProtocol(), From: from, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	// The rule's threshold is the median over chains of the feature's
	// largest value, so that it fires in some chains and not in others.
	field := fieldIndex(t, "plan_gap_last_h")
	var maxima []float64
	for _, ep := range data.Episodes {
		m := math.Inf(-1)
		for _, x := range ep.X {
			m = math.Max(m, x[field])
		}
		maxima = append(maxima, m)
	}
	sort.Float64s(maxima)
	rule := testFieldRule{field: field, th: maxima[len(maxima)/2]}
	samples, err := RunPairs(context.Background(), PairConfig{Scenario: sc, Protocol: testProtocol(), From: from, Until: until,
		Policies: []string{"reactive", "field-rule", "oracle"}, Factory: testFactory(rule), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 3*len(data.Episodes) || len(data.Episodes) != 12 {
		t.Fatalf("%d samples for %d episodes (want 3 × 12)", len(samples), len(data.Episodes))
	}
	fired := 0
	for i, ep := range data.Episodes {
		react, rule1, oracle := samples[3*i], samples[3*i+1], samples[3*i+2]
		if react.Policy != "reactive" || rule1.Policy != "field-rule" || oracle.Policy != "oracle" || !react.Inject.Equal(ep.Inject) || react.Nodes != ep.Nodes {
			t.Fatalf("sample order: %+v", react)
		}
		if react.Gap.Seconds() != ep.Reactive {
			t.Errorf("chain %s: reactive %s, table %v s", react.ChainID, react.Gap, ep.Reactive)
		}
		if react.LoadClass != metrics.LoadClassOf(react.Gap) || rule1.LoadClass != react.LoadClass {
			t.Errorf("load class %s for reactive gap %s", react.LoadClass, react.Gap)
		}
		k := -1
		for j, x := range ep.X {
			if x[rule.field] >= rule.th {
				k = j
				break
			}
		}
		if k >= 0 {
			fired++
		}
		want, _ := ep.Outcome(k)
		if rule1.Gap.Seconds() != want {
			t.Errorf("chain %s: rule gap %s, table (tick %d) %v s", rule1.ChainID, rule1.Gap, k, want)
		}
		// The oracle plans over the same instants: no tick (nor the deadline) does better.
		best := math.Abs(ep.Reactive)
		for _, g := range ep.Gap {
			best = math.Min(best, math.Abs(g))
		}
		if math.Abs(oracle.Gap.Seconds()) != best {
			t.Errorf("chain %s: oracle |gap| %s, best in the table %v s", oracle.ChainID, oracle.Gap, best)
		}
		if rule1.Submits != 1 || rule1.Protocol != metrics.ProtocolPair || rule1.Segment != 1 || rule1.GPUs != 3*ep.Nodes {
			t.Errorf("sample fields %+v", rule1)
		}
	}
	if fired == 0 || fired == len(data.Episodes) {
		t.Errorf("the rule fired in %d of %d chains: the test needs both cases", fired, len(data.Episodes))
	}
}

func TestRunPairsDeterministic(t *testing.T) {
	sc := testScenario(t)
	cfg := PairConfig{Scenario: sc, Protocol: testProtocol(), From: sc.First.Add(3 * 24 * time.Hour), Until: sc.First.Add(4 * 24 * time.Hour),
		Policies: []string{"average", "quantile", "reactive"}, Factory: testFactory(testFieldRule{}), Workers: 1}
	a, err := RunPairs(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 3
	b, err := RunPairs(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("1 and 3 workers gave different samples")
	}
	cfg.Policies = []string{"nope"}
	if _, err := RunPairs(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown policy: %v", err)
	}
}

func TestPairTable(t *testing.T) {
	h := func(x float64) time.Duration { return time.Duration(x * float64(time.Hour)) }
	// Policy a: gaps +2 h (1 node, low), −1 h (8 nodes, heavy); b: 0 and +0.5 h.
	s := []metrics.Sample{
		{Policy: "a", Nodes: 1, GPUs: 3, LoadClass: metrics.LoadLow, Gap: h(2)},
		{Policy: "b", Nodes: 1, GPUs: 3, LoadClass: metrics.LoadLow, Gap: 0},
		{Policy: "a", Nodes: 8, GPUs: 24, LoadClass: metrics.LoadHeavy, Gap: h(-1)},
		{Policy: "b", Nodes: 8, GPUs: 24, LoadClass: metrics.LoadHeavy, Gap: h(0.5)},
	}
	rows := PairRows(s, scenario.DefaultGapCost)
	var b strings.Builder
	if err := WritePairTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	// a over all: interruptions [2 0] → mean 1, p90 1.8; overlaps [0 1] → mean 0.5, p90 0.9;
	// zero interruption 1 of 2; within 1 h: the −1 h one; mean |gap| 1.5.
	want := "| all | a | 2 | 1.00 | 1.80 | 0.50 | 0.90 | 50% | 50% | 1.50 |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	// b in the heavy class: +0.5 h.
	if !strings.Contains(b.String(), "| heavy | b | 1 | 0.50 | 0.50 | 0.00 | 0.00 | 0% | 100% | 0.50 |") {
		t.Errorf("heavy row of b missing:\n%s", b.String())
	}
	var groups []string
	for _, r := range rows {
		if r.Policy == "a" {
			groups = append(groups, r.Group)
		}
	}
	if strings.Join(groups, ",") != "all,1 node,8 nodes,low,heavy" {
		t.Errorf("groups %v", groups)
	}
}

// testRecorder wraps a policy and keeps the features of every observation it was shown.
type testRecorder struct {
	provisioner.Policy
	mu   *sync.Mutex
	seen map[string][][]float64 // chain id → features per call
}

func (r testRecorder) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	x, err := features.Features(obs)
	if err != nil {
		return provisioner.Decision{}, err
	}
	r.mu.Lock()
	r.seen[obs.Chain.ID] = append(r.seen[obs.Chain.ID], x)
	r.mu.Unlock()
	return r.Policy.Decide(obs)
}

// TestRunPairsEngineMatchesDataset: deciding through the provisioner's
// engine (as the daemon does), the harness shows a policy exactly the
// features the dataset recorded at each tick: one observation builder
// (provisioner.Observe) serves the daemon's step and the datasets.
func TestRunPairsEngineMatchesDataset(t *testing.T) {
	sc := testScenario(t)
	from, until := sc.First.Add(4*24*time.Hour), sc.First.Add(5*24*time.Hour)
	names := []string{"reactive", "dependency", "lead", "start-estimate", "pin", "average", "quantile", "field-rule"}
	rule := testFieldRule{field: fieldIndex(t, "pred_left_h"), th: 1e9} // never fires: every tick is observed
	var mu sync.Mutex
	seen := map[string][][]float64{}
	factory := func(probe models.OracleProbe) provisioner.PolicyFactory {
		f := models.PolicyFactory("", models.PolicyOptions{Probe: probe})
		return func(name string) (provisioner.Policy, error) {
			if name == "field-rule" {
				return testRecorder{Policy: rule, mu: &mu, seen: seen}, nil
			}
			return f(name)
		}
	}
	cfg := PairConfig{Scenario: sc, Protocol: testProtocol(), From: from, Until: until, Policies: names, Factory: factory}
	viaEngine, err := RunPairs(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	engineSeen := seen
	data, err := dataset.GenerateChainData(context.Background(), sc, dataset.GenOptions{Protocol: testProtocol(), From: from, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range data.Episodes {
		id := scenario.ChainID(ep.Inject, ep.Nodes)
		if !reflect.DeepEqual(engineSeen[id], ep.X) {
			t.Errorf("chain %s: the engine showed %d observations whose features differ from the dataset's %d ticks", id, len(engineSeen[id]), len(ep.X))
		}
	}
	// The dependency baseline submits with afterany at once: it never
	// overlaps; a pinned successor overlaps at most by pin's lead (it starts
	// early only when unpinned within it, on free nodes), and where nodes
	// are busy pin differs from lead.
	leadGap := map[string]time.Duration{}
	for _, s := range viaEngine {
		if s.Policy == "lead" {
			leadGap[s.ChainID] = s.Gap
		}
	}
	differs := 0
	for _, s := range viaEngine {
		if g, ok := leadGap[s.ChainID]; s.Policy == "pin" && ok && g != s.Gap {
			differs++
		}
		if s.Policy == "dependency" && s.Gap < 0 {
			t.Errorf("dependency overlapped: %+v", s)
		}
		if s.Policy == "pin" && s.Gap < -provisioner.DefaultLead {
			t.Errorf("pin overlapped beyond its lead: %+v", s)
		}
	}
	if differs == 0 {
		t.Error("pin decided exactly as lead on every hand-off: the scenario never exercised a pinned successor")
	}
}
