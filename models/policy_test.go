package models_test

import (
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/nn"
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
}
