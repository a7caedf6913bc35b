package models_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/nn"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestPolicyFactoryLoadsLearned: a learned model is read from DIR/NAME, and
// its kind must fit the name (the rest of the factory: TestPolicyFactory).
func TestPolicyFactoryLoadsLearned(t *testing.T) {
	dir := t.TempDir()
	f := models.PolicyFactory(dir, models.PolicyOptions{})
	net, err := nn.NewMLP(nn.MLPConfig{Inputs: features.NumFeatures(), Hidden: []int{4}, Outputs: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.NewPolicyNetModel(net, nil, models.Meta{Kind: models.KindDQN, Schema: features.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	m.SetMeta(models.Meta{Kind: models.KindDQN, Task: models.Preference, Schema: features.Schema()})
	if err := models.Save(dir+"/dqn", m); err != nil {
		t.Fatal(err)
	}
	p, err := f("dqn")
	if err != nil || p.Name() != "dqn" {
		t.Fatalf("dqn: %v, %v", p, err)
	}
	if err := models.Save(dir+"/pg", m); err != nil {
		t.Fatal(err)
	}
	if _, err := f("pg"); err == nil || !strings.Contains(err.Error(), "holds a dqn model, want pg") {
		t.Errorf("kind mismatch: %v", err)
	}
	// The pinned form: dqn's model under the name dqn-pin, pinning where no
	// node is free (a busy snapshot: no node at all), and no model, no form.
	pp, err := f("dqn" + models.PinSuffix)
	if err != nil || pp.Name() != "dqn-pin" {
		t.Fatalf("dqn-pin: %v, %v", pp, err)
	}
	t0 := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	pred := provisioner.Job{ID: "1", State: provisioner.StateRunning, Start: t0, TimeLimit: time.Hour, Nodes: 1, GPUs: 4, NodeList: []string{"n1"}}
	d, err := pp.Decide(&provisioner.Observation{Now: t0.Add(10 * time.Minute), Predecessor: &pred, Successor: provisioner.SubmitRequest{Nodes: 1, GPUs: 4},
		Snapshot: &provisioner.Snapshot{Time: t0, Nodes: []provisioner.Node{{Name: "n1", State: provisioner.NodeUp, CPUs: 8, GPUs: 4, GPUsUsed: 4}}}})
	if err != nil || d.Action != provisioner.SubmitPinned {
		t.Errorf("dqn-pin with no node free: %s (%v), want submit-pinned", d.Action, err)
	}
	if _, err := f("rf" + models.PinSuffix); !errors.Is(err, models.ErrNoModel) {
		t.Errorf("rf-pin without rf's model: %v, want ErrNoModel", err)
	}
}

// TestPinnedNames: NAME-pin is a pinned form only of a learned NAME.
func TestPinnedNames(t *testing.T) {
	for name, want := range map[string]models.Ref{
		"xgb-online-pin": {Base: "xgb-online", Pinned: true}, "xgb-pin": {Base: "xgb", Pinned: true},
		"pin": {Base: "pin"}, "lead-pin": {Base: "lead-pin"}, "xgb": {Base: "xgb"}, "xgb-pin-pin": {Base: "xgb-pin-pin"},
	} {
		r := models.ParseRef(name)
		if r != want || r.String() != name {
			t.Errorf("ParseRef(%q) = %+v (%q); want %+v", name, r, r.String(), want)
		}
	}
	for name, want := range map[string]bool{"xgb-online-pin": true, "xgb": true, "dqn-pin": true, "pin": false, "lead-pin": false, "lead": false} {
		if got := models.ParseRef(name).UsesModel(); got != want {
			t.Errorf("ParseRef(%q).UsesModel() = %v, want %v", name, got, want)
		}
	}
}

// TestWithFallback: a learned policy without a model is replaced by lead,
// whose decisions say which policy they stand in for; a model saved later
// is used on the next call; unknown names stay errors.
func TestWithFallback(t *testing.T) {
	dir := t.TempDir()
	var warned []string
	f := models.WithFallback(models.PolicyFactory(dir, models.PolicyOptions{}), provisioner.PolicyLead,
		func(name string, err error) { warned = append(warned, name+": "+err.Error()) })
	p, err := f("dqn")
	if err != nil || p.Name() != provisioner.PolicyLead {
		t.Fatalf("dqn without a model: %v, %v; want lead standing in", p, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "no trained model") || !strings.Contains(warned[0], dir) {
		t.Errorf("warnings %q", warned)
	}
	// A running predecessor ending in 2 h: lead (10 min before the end by
	// default) waits; the reason names dqn and lead.
	now := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	pred := provisioner.Job{ID: "1", State: provisioner.StateRunning, Start: now.Add(-time.Hour), TimeLimit: 3 * time.Hour}
	d, err := p.Decide(&provisioner.Observation{Now: now, Snapshot: &provisioner.Snapshot{Time: now}, Chain: &provisioner.Chain{Policy: "dqn"}, Predecessor: &pred})
	if err != nil || d.Action != provisioner.Wait || !strings.HasPrefix(d.Reason, "dqn unavailable (") || !strings.Contains(d.Reason, "), lead decides: ") {
		t.Errorf("decision %+v, %v", d, err)
	}
	if _, err := f("no-such-policy"); !errors.Is(err, models.ErrUnknownPolicy) {
		t.Errorf("unknown name: %v, want ErrUnknownPolicy", err)
	}
	saveDQN(t, dir+"/dqn", time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC))
	p, err = f("dqn")
	if err != nil || p.Name() != "dqn" {
		t.Fatalf("dqn once saved: %v, %v", p, err)
	}
	if u, ok := p.(interface{ Unwrap() provisioner.Policy }); ok {
		p = u.Unwrap() // guarded against panics
	}
	if mp, ok := p.(*models.ModelPolicy); !ok || mp.Version != "2026-11-25T14:00:00Z" {
		t.Errorf("policy %#v: want a ModelPolicy of version 2026-11-25T14:00:00Z", p)
	}
}

// panicky is a learned policy whose Decide panics, as a planted model did
// in MLP.Forward (#50).
type panicky struct{}

func (panicky) Name() string { return "dqn" }
func (panicky) Decide(*provisioner.Observation) (provisioner.Decision, error) {
	var s []float64
	_ = s[4] // index out of range, as in the planted model
	return provisioner.Decision{}, nil
}

// TestWithFallbackRecovers (#50): a learned policy that panics while it
// decides, or while its model is read, does not stop the caller: lead
// decides instead, its reason naming the learned policy and the panic,
// and warn is told. A pinned form without its model is replaced by pin.
func TestWithFallbackRecovers(t *testing.T) {
	var warned []string
	base := func(name string) (provisioner.Policy, error) {
		switch name {
		case "dqn":
			return panicky{}, nil
		case "pg":
			panic("gob: planted")
		case "xgb-pin":
			return nil, fmt.Errorf("policy %q: %w", name, models.ErrNoModel)
		}
		return provisioner.BaselinePolicy(name)
	}
	f := models.WithFallback(base, provisioner.PolicyLead, func(name string, err error) { warned = append(warned, name+": "+err.Error()) })
	// A running predecessor ending in 2 h: lead (10 min before the end)
	// waits, as in TestWithFallback; here what matters is who decided and
	// why.
	now := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	pred := provisioner.Job{ID: "1", State: provisioner.StateRunning, Start: now.Add(-time.Hour), TimeLimit: 3 * time.Hour}
	obs := &provisioner.Observation{Now: now, Snapshot: &provisioner.Snapshot{Time: now}, Chain: &provisioner.Chain{Policy: "dqn"}, Predecessor: &pred}

	p, err := f("dqn")
	if err != nil || p.Name() != "dqn" {
		t.Fatalf("dqn: %v, %v; want the guarded learned policy", p, err)
	}
	d, err := p.Decide(obs)
	if err != nil || d.Action != provisioner.Wait || !strings.HasPrefix(d.Reason, "dqn failed (learned policy panicked: runtime error: index out of range [4] with length 0), lead decides: ") {
		t.Errorf("dqn's panicking decision: %+v, %v; want lead's wait naming the panic", d, err)
	}
	p, err = f("pg")
	if err != nil || p.Name() != provisioner.PolicyLead {
		t.Fatalf("pg panicking while read: %v, %v; want lead standing in", p, err)
	}
	if d, err := p.Decide(obs); err != nil || !strings.HasPrefix(d.Reason, "pg unavailable (learned policy panicked while its model was read: gob: planted), lead decides: ") {
		t.Errorf("pg's stand-in decision: %+v, %v", d, err)
	}
	p, err = f("xgb-pin")
	if err != nil || p.Name() != provisioner.PolicyPin {
		t.Fatalf("xgb-pin without a model: %v, %v; want pin standing in", p, err)
	}
	if len(warned) != 3 || !strings.HasPrefix(warned[0], "dqn: learned policy panicked") || !strings.HasPrefix(warned[1], "pg: ") || !strings.HasPrefix(warned[2], "xgb-pin: ") {
		t.Errorf("warnings %q", warned)
	}
}

func saveDQN(t *testing.T, dir string, created time.Time) {
	t.Helper()
	net, err := nn.NewMLP(nn.MLPConfig{Inputs: features.NumFeatures(), Hidden: []int{4}, Outputs: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	meta := models.Meta{Kind: models.KindDQN, Task: models.Preference, Schema: features.Schema(), Created: created}
	m, err := nn.NewPolicyNetModel(net, nil, meta)
	if err != nil {
		t.Fatal(err)
	}
	m.SetMeta(meta)
	if err := models.Save(dir, m); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultDir(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"MIRAGE_MODELS": "/m", "XDG_DATA_HOME": "/x", "HOME": "/h"}, "/m"},
		{map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, "/x/mirage/models"},
		{map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/h"}, "/h/.local/share/mirage/models"}, // relative XDG paths are ignored (XDG spec)
		{map[string]string{"HOME": "/h"}, "/h/.local/share/mirage/models"},
	} {
		if got := models.DefaultDir(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("DefaultDir(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}
