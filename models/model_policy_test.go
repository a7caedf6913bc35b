package models

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
	"github.com/mirage-gpu/mirage/provisioner"
)

// testFixedModel predicts a constant; it records the width it was asked about.
type testFixedModel struct {
	task  Task
	value float64
	width int
	wait  bool // on the wait schema (else the chain schema)
}

func (f *testFixedModel) Meta() Meta {
	if f.wait {
		return Meta{Kind: "fixed", Task: f.task, Schema: features.WaitSchema()}
	}
	return Meta{Kind: "fixed", Task: f.task, Schema: features.Schema()}
}
func (f *testFixedModel) Predict(x []float64) (float64, error) {
	f.width = len(x)
	return f.value, nil
}
func (f *testFixedModel) PredictBatch(rows [][]float64, out []float64) error { return nil }
func (f *testFixedModel) SaveFiles(string) error                             { return nil }

func TestModelPolicyDecide(t *testing.T) {
	tests := []struct {
		name   string
		task   Task
		value  float64
		mutate func(*provisioner.Observation)
		want   provisioner.Action
		reason string
	}{
		{"gap exactly -30 min submits", Regression, -1800, nil, provisioner.SubmitNow, "predicted gap -30m0s ≥ -30m0s: submit"},
		{"gap -31 min waits", Regression, -1860, nil, provisioner.Wait, "predicted gap -31m0s < -30m0s: wait"},
		{"interruption predicted submits", Regression, 7200, nil, provisioner.SubmitNow, "submit"},
		{"P(safe) 0.5 submits", Classification, 0.5, nil, provisioner.SubmitNow, "P(safe)=0.50 ≥ 0.50: submit"},
		{"P(safe) 0.49 waits", Classification, 0.49, nil, provisioner.Wait, "P(safe)=0.49 < 0.50: wait"},
		{"preference 0 submits", Preference, 0, nil, provisioner.SubmitNow, "preference for submitting 0.000 ≥ 0.000: submit"},
		{"preference < 0 waits", Preference, -0.2, nil, provisioner.Wait, "preference for submitting -0.200 < 0.000: wait"},
		{"no predecessor", Regression, -1e6, func(o *provisioner.Observation) { o.Predecessor = nil }, provisioner.SubmitNow, ReasonNoPredecessor},
		{"predecessor finished", Regression, -1e6, func(o *provisioner.Observation) {
			p := *o.Predecessor
			p.State = provisioner.StateTimeout
			o.Predecessor = &p
		}, provisioner.SubmitNow, ReasonNoPredecessor},
		{"predecessor pending", Regression, 1e6, func(o *provisioner.Observation) {
			p := *o.Predecessor
			p.State = provisioner.StatePending
			o.Predecessor = &p
		}, provisioner.Wait, ReasonPredecessorPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &testFixedModel{task: tt.task, value: tt.value}
			p, err := NewModelPolicy("test", m)
			if err != nil {
				t.Fatal(err)
			}
			obs := testobs.Observation()
			if tt.mutate != nil {
				tt.mutate(obs)
			}
			d, err := p.Decide(obs)
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != tt.want || !strings.HasSuffix(d.Reason, tt.reason) {
				t.Errorf("decision %+v, want %s with reason ending %q", d, tt.want, tt.reason)
			}
			if m.width != 0 && m.width != features.NumFeatures() {
				t.Errorf("model saw %d features, want %d", m.width, features.NumFeatures())
			}
		})
	}
}

type testOtherSchemaModel struct{ testFixedModel }

func (o *testOtherSchemaModel) Meta() Meta {
	return Meta{Kind: "fixed", Schema: features.SchemaID{Name: features.FeatureSchemaName, Version: features.FeatureSchemaVersion + 1}}
}

func TestModelPolicyRefusesOtherSchema(t *testing.T) {
	_, err := NewModelPolicy("test", &testOtherSchemaModel{})
	if !errors.Is(err, features.ErrSchemaMismatch) {
		t.Fatalf("err = %v, want ErrSchemaMismatch", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("v%d", features.FeatureSchemaVersion)) || !strings.Contains(err.Error(), fmt.Sprintf("v%d", features.FeatureSchemaVersion+1)) {
		t.Errorf("message %q should name both versions", err)
	}
}

func TestFeatureDigest(t *testing.T) {
	a := FeatureDigest([]float64{1, 2, 3})
	if a != FeatureDigest([]float64{1, 2, 3}) || a == FeatureDigest([]float64{1, 2, 3.0000001}) {
		t.Error("digest not stable or not sensitive")
	}
	if !strings.HasPrefix(a, fmt.Sprintf("v%d:", features.FeatureSchemaVersion)) || len(a) != 3+16 {
		t.Errorf("digest %q", a)
	}
}

// TestModelPolicyWorkload: a chain decides with its workload's thresholds.
// The model predicts a gap of −3 h; the rule's own threshold (−30 min)
// waits, the training workload's (−4 h) submits, the service workload's
// (+1 h) waits; a workload the model was not tuned for, or explicit
// weights, fall back to the rule's own and say so.
func TestModelPolicyWorkload(t *testing.T) {
	m := &testFixedModel{task: Regression, value: -3 * 3600}
	p, err := NewModelPolicy("test", m)
	if err != nil {
		t.Fatal(err)
	}
	p.Rule.ByWorkload = map[string]WorkloadRule{
		provisioner.WorkloadTraining: {Threshold: -4 * 3600},
		provisioner.WorkloadService:  {Threshold: 3600, BySize: []SizeThreshold{{Nodes: 1, Threshold: 7200}}},
	}
	for _, c := range []struct {
		workload string
		cost     *provisioner.GapCost
		want     provisioner.Action
		note     string
	}{
		{"", nil, provisioner.Wait, ""},
		{provisioner.WorkloadTraining, nil, provisioner.SubmitNow, "the training workload's thresholds"},
		{provisioner.WorkloadService, nil, provisioner.Wait, "the service workload's thresholds"},
		{"batch", nil, provisioner.Wait, "has none for the batch workload"},
		{provisioner.WorkloadTraining, &provisioner.GapCost{InterruptionPerHour: 1}, provisioner.Wait, "not of the chain's own weights"},
	} {
		obs := testobs.Observation()
		ch := *obs.Chain
		ch.Workload, ch.Cost = c.workload, c.cost
		obs.Chain = &ch
		d, err := p.Decide(obs)
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != c.want || c.note != "" && !strings.Contains(d.Reason, c.note) || c.note == "" && strings.Contains(d.Reason, "(") {
			t.Errorf("workload %q cost %v: %s (%s), want %s noting %q", c.workload, c.cost, d.Action, d.Reason, c.want, c.note)
		}
	}
}

// TestModelPolicyHold: the model predicts a 2 h wait with 2 h left (gap 0:
// submit under the default rule). Placed ahead of the pending queue, the
// 1-node, 4-GPU successor starts at once on node n3 (8 idle GPUs), 2 h before
// its predecessor ends (plan_gap_first_h = −2, features_test's hand values):
// a hold of 1 h waits, one of 3 h does not. A prediction that does not reach
// the threshold waits for that reason, whatever the hold.
func TestModelPolicyHold(t *testing.T) {
	for _, c := range []struct {
		hold, wait float64
		want       provisioner.Action
		reason     string
	}{
		{0, 7200, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
		{1, 7200, provisioner.Wait, "the scheduler's plan starts the successor 2h0m0s before its predecessor ends, more than the hold of 1h0m0s: wait"},
		{3, 7200, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
		{1, 3600, provisioner.Wait, "predicted gap -1h0m0s < -30m0s: wait"},
	} {
		p, err := NewModelPolicy("test", &testFixedModel{task: Regression, value: c.wait})
		if err != nil {
			t.Fatal(err)
		}
		p.Rule = DecisionRule{Target: TargetWait, Threshold: -1800, Hold: c.hold}
		d, err := p.Decide(testobs.Observation())
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != c.want || !strings.HasSuffix(d.Reason, c.reason) {
			t.Errorf("hold %g h, wait %g s: %s %q, want %s ending %q", c.hold, c.wait, d.Action, d.Reason, c.want, c.reason)
		}
	}
}

// TestModelPolicyOnline: the online rule's threshold moves with the
// hand-offs of the policy's own chains of the same size known since its
// model's training (one step of 1 h per gap beyond the 15-min dead band),
// and its guard waits while P(low load) ≥ Gamma. The observation's
// predicted gap is 0 s (wait 2 h, 2 h left); the trained threshold −30 min.
func TestModelPolicyOnline(t *testing.T) {
	now := testobs.T0
	since := now.Add(-48 * time.Hour)
	own := provisioner.HandOff{Policy: "test", Nodes: 1, Gap: -2 * time.Hour, Known: now.Add(-time.Hour)}
	with := func(f func(*provisioner.HandOff)) provisioner.HandOff { h := own; f(&h); return h }
	for _, c := range []struct {
		name     string
		gamma    float64
		pLow     float64
		handOffs []provisioner.HandOff
		want     provisioner.Action
		reason   string
	}{
		{"no outcome yet", 1, 0, nil, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
		// an overlap of 2 h raises the threshold by 1 h: −30 min → +30 min
		{"own overlap", 1, 0, []provisioner.HandOff{own}, provisioner.Wait,
			"predicted gap 0s < 30m0s: wait (threshold moved +1h0m0s by the realised hand-offs)"},
		// a late start of 3 h lowers it by 1 h: the decision stays
		{"own late start", 1, 0, []provisioner.HandOff{with(func(h *provisioner.HandOff) { h.Gap = 3 * time.Hour })}, provisioner.SubmitNow,
			"predicted gap 0s ≥ -1h30m0s: submit (threshold moved -1h0m0s by the realised hand-offs)"},
		{"within the dead band", 1, 0, []provisioner.HandOff{with(func(h *provisioner.HandOff) { h.Gap = -10 * time.Minute })}, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
		{"another policy's", 1, 0, []provisioner.HandOff{with(func(h *provisioner.HandOff) { h.Policy = "lead" })}, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
		{"another size's", 1, 0, []provisioner.HandOff{with(func(h *provisioner.HandOff) { h.Nodes = 8 })}, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
		{"known before the model", 1, 0, []provisioner.HandOff{with(func(h *provisioner.HandOff) { h.Known = since.Add(-time.Minute) })}, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
		{"guard sure of low load", 0.5, 0.7, nil, provisioner.Wait, "guard: P(low load)=0.70 ≥ 0.50: wait; the successor is submitted when its predecessor ends, where an early start could only cost overlap"},
		{"guard at its level", 0.5, 0.5, nil, provisioner.Wait, "guard: P(low load)=0.50 ≥ 0.50: wait; the successor is submitted when its predecessor ends, where an early start could only cost overlap"},
		{"guard unsure", 0.5, 0.3, nil, provisioner.SubmitNow, "predicted gap 0s ≥ -30m0s: submit"},
	} {
		p, err := NewModelPolicy("test", &testFixedModel{task: Regression, value: 7200})
		if err != nil {
			t.Fatal(err)
		}
		p.Rule = DecisionRule{Target: TargetWait, Threshold: -1800,
			Online: &OnlineRule{Gamma: c.gamma, Step: 3600, DeadBand: 900, Since: since}}
		p.Guard = &testFixedModel{task: Classification, value: c.pLow}
		obs := testobs.Observation()
		obs.HandOffs = c.handOffs
		d, err := p.Decide(obs)
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != c.want || !strings.HasSuffix(d.Reason, c.reason) {
			t.Errorf("%s: %s %q, want %s ending %q", c.name, d.Action, d.Reason, c.want, c.reason)
		}
	}
}

// TestModelPolicyHandOffRule: the hand-off rule's two parts. The model
// predicts a 10 min wait with 2 h left (testChainObs), which alone waits.
//   - WaitShift moves the prediction on the log1p(wait/60 s) scale: by
//     ln 11 it becomes 60·(e^(2 ln 11) − 1) = 60·120 s = 2 h, the time left;
//     a hair above submits, a hair below waits.
//   - The floor submits when its QBETS bound does (waits 0, 10, …, 190 min,
//     q 0.5: c 0.9 bounds by 2 h 10 min ≥ 2 h; c 0.5 by 1 h 40 min, see
//     TestQuantilePolicy), whatever the model says.
func TestModelPolicyHandOffRule(t *testing.T) {
	var ws []time.Duration
	for i := 0; i < 20; i++ {
		ws = append(ws, time.Duration(i)*10*time.Minute)
	}
	for _, c := range []struct {
		name   string
		shift  float64
		floorC float64 // floor's confidence (0: no floor)
		want   provisioner.Action
		reason string
	}{
		{"model alone", 0, 0, provisioner.Wait, "predicted gap -1h50m0s < 0s: wait"},
		{"shift just above", math.Log(11) + 0.001, 0, provisioner.SubmitNow, "predicted gap 0s ≥ 0s: submit"},
		{"shift just below", math.Log(11) - 0.001, 0, provisioner.Wait, "predicted gap 0s < 0s: wait"},
		{"floor reaches", 0, 0.9, provisioner.SubmitNow, "floor: quantile: predecessor ends in 2h0m0s ≤ 2h10m0s"},
		{"floor short", 0, 0.5, provisioner.Wait, "predicted gap -1h50m0s < 0s: wait"},
	} {
		p, err := NewModelPolicy("test", &testFixedModel{task: Regression, value: 600})
		if err != nil {
			t.Fatal(err)
		}
		p.Rule = DecisionRule{Target: TargetWait, WaitShift: c.shift}
		if c.floorC > 0 {
			p.Rule.Floor = &QuantilePolicy{Quantile: 0.5, Confidence: c.floorC, Window: 20}
		}
		d, err := p.Decide(testChainObs(ws...))
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != c.want || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, d.Action, d.Reason, c.want, c.reason)
		}
	}
}
