package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

var chainT0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

// simBackend adapts the simulator to the chain commands' backend.
type simBackend struct{ *sim.Sim }

func (b simBackend) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	return b.Sim.History(since), nil
}

// chainEnv runs the chain commands against an empty 4-node simulated
// cluster whose clock starts at chainT0; waiting (the daemon's interval,
// handoff's polling) advances the simulator.
type chainEnv struct {
	s     *sim.Sim
	f     *Factory // the simulator as backend, clock and waiting
	state string   // --state directory
	dir   string   // scratch directory
}

func newChainEnv(t *testing.T) *chainEnv {
	t.Helper()
	cfg := sim.Defaults()
	for i := 1; i <= 4; i++ {
		cfg.Nodes = append(cfg.Nodes, sim.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 8, GPUs: 4})
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetStart(chainT0)
	// A no-op decision callback keeps bounded runs going to their end
	// (without one the simulator stops when it has nothing left to do).
	s.OnTick(time.Minute, func(time.Time, provisioner.Cluster) {})
	f := testFactory(nil)
	f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return simBackend{s}, nil }
	f.Now = s.Now
	f.Seed = func() uint64 { return 42 }
	f.Sleep = func(ctx context.Context, d time.Duration) error {
		s.Run(s.Now().Add(d))
		return nil
	}
	dir := t.TempDir()
	return &chainEnv{s: s, f: f, state: filepath.Join(dir, "state"), dir: dir}
}

// script writes a batch script with the given #SBATCH lines.
func (e *chainEnv) script(t *testing.T, name string, sbatch ...string) string {
	t.Helper()
	body := "#!/bin/bash\n"
	for _, l := range sbatch {
		body += "#SBATCH " + l + "\n"
	}
	body += "\nsrun python train.py --resume\n"
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs mirage with --state appended where the command takes it.
func (e *chainEnv) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	full := append([]string{}, args...)
	// insert --state before a "--" separator, if any
	for i, a := range full {
		if a == "--" {
			full = append(full[:i:i], append([]string{"--state", e.state}, full[i:]...)...)
			return runWith(t, e.f, full...)
		}
	}
	return runWith(t, e.f, append(full, "--state", e.state)...)
}

var chainIDRe = regexp.MustCompile(`c-\d{8}-[0-9a-f]{6}`)

// submitChain submits a chain and returns its id.
func (e *chainEnv) submitChain(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := e.run(t, append([]string{"submit"}, args...)...)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s%s", code, out, stderr)
	}
	id := chainIDRe.FindString(out)
	if id == "" {
		t.Fatalf("no chain id in %q", out)
	}
	return id
}
