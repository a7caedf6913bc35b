package sim

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOptionsConfig(t *testing.T) {
	t.Parallel()
	cfg, err := Options{Preset: "ls6", Nodes: 4, Backfill: "off", BFWindow: time.Hour, Latency: -1, Seed: 7, Weights: "age=2,qos=3"}.Config()
	if err != nil || len(cfg.Nodes) != 4 || cfg.Backfill || cfg.BFWindow != time.Hour || cfg.SchedLatency != LS6().SchedLatency || cfg.Seed != 7 ||
		cfg.PriorityWeightAge != 2 || cfg.PriorityWeightQOS != 3 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	// Weights count only under priority/multifactor: giving them selects it
	// over the default preset's priority/basic.
	conf1 := filepath.Join(t.TempDir(), "one.conf")
	if err := os.WriteFile(conf1, []byte("NodeName=n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for weights, want := range map[string]string{"": PriorityBasic, "age=1000": PriorityMultifactor} {
		cfg, err := Options{Preset: "default", SlurmConf: conf1, Latency: -1, Weights: weights}.Config()
		if err != nil || cfg.PriorityType != want {
			t.Errorf("default preset, weights %q: PriorityType %q (%v), want %q", weights, cfg.PriorityType, err, want)
		}
	}
	for _, o := range []Options{{Preset: "philly"}, {Preset: "ls6", Backfill: "maybe"}, {Preset: "ls6", Weights: "age=x"},
		{Preset: "ls6", Weights: "luck=1"}, {Preset: "default"}} {
		if _, err := o.Config(); !errors.Is(err, ErrOption) {
			t.Errorf("%+v: %v, want ErrOption", o, err)
		}
	}
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("NodeName=n[3-1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Options{Preset: "default", SlurmConf: conf}).Config(); err == nil || errors.Is(err, ErrOption) {
		t.Errorf("bad slurm.conf: %v, want a configuration error", err)
	}
}
