package train

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
)

// TestRunRefusesBadSpecs: what the CLI maps to a usage or input error is
// refused before any simulation, with the matching sentinel.
func TestRunRefusesBadSpecs(t *testing.T) {
	good := func() Spec {
		return Spec{Models: []string{"rf"}, Out: t.TempDir(), WaitReplicas: 1, Cluster: sim.LS6(), TraceName: "empty"}
	}
	tests := []struct {
		name string
		edit func(*Spec)
		want error
	}{
		{"unknown model", func(s *Spec) { s.Models = []string{"nope"} }, ErrSpec},
		{"nothing to train", func(s *Spec) { s.Models = nil }, ErrSpec},
		{"wait replicas", func(s *Spec) { s.WaitReplicas = 65 }, ErrSpec},
		{"scale", func(s *Spec) { s.Scales = []float64{0.5} }, ErrSpec},
		{"target", func(s *Spec) { s.Target = "both" }, ErrSpec},
		{"workload", func(s *Spec) { s.Workload = "batch" }, ErrSpec},
		{"windows", func(s *Spec) {
			s.TrainUntil = time.Date(2022, 11, 3, 0, 0, 0, 0, time.UTC)
			s.Until = s.TrainUntil.Add(-time.Hour)
		}, ErrSpec},
		{"protocol", func(s *Spec) { s.Protocol = scenario.Protocol{Limit: time.Hour, Lead: 2 * time.Hour} }, ErrSpec},
		{"no replayable job", func(*Spec) {}, ErrInput},
	}
	for _, tt := range tests {
		s := good()
		tt.edit(&s)
		if _, err := Run(context.Background(), s); !errors.Is(err, tt.want) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestTargetOnlyForPolicies: the xgb regression target is checked only
// when a policy is trained (the wait model ignores it).
func TestTargetOnlyForPolicies(t *testing.T) {
	testenv.XGBoost(t, CheckBuild([]string{"xgb", WaitModel}) == nil)
	s := Spec{Out: t.TempDir(), WaitReplicas: 1, Cluster: sim.LS6(), TraceName: "empty"}
	s.Models, s.Target = []string{WaitModel}, "both"
	if err := s.Validate(); err != nil {
		t.Errorf("wait only with target %q: %v", s.Target, err)
	}
	s.Models, s.Target = []string{"xgb"}, models.TargetGap
	if err := s.Validate(); err != nil {
		t.Errorf("gap target: %v", err)
	}
}

func TestModelNames(t *testing.T) {
	got, err := ModelNames([]string{" xgb", "wait", "", "xgb ", "rf"})
	if want := []string{"xgb", "wait", "rf"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ModelNames = %q, %v; want %q", got, err, want)
	}
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{[]string{"xgb", "nope"}, `--model "nope": want rf, rf-golearn, rf-xgb, xgb, xgb-online, dqn, pg or wait`},
		{[]string{" ", ""}, "--model: nothing to train"},
		{nil, "--model: nothing to train"},
	} {
		if _, err := ModelNames(tt.in); !errors.Is(err, ErrSpec) || err.Error() != tt.want {
			t.Errorf("ModelNames(%q) error %v, want %q wrapping ErrSpec", tt.in, err, tt.want)
		}
	}
}
