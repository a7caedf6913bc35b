package main

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/provisioner"
)

// handoffCluster holds one running predecessor "7" that exits endAfter
// after it receives a signal (never when endAfter is 0).
type handoffCluster struct {
	clock     *fakeClock
	started   time.Time // predecessor start; zero = unknown
	endAfter  time.Duration
	signalled time.Time
	signals   []string
	cancelled []string
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

func (h *handoffCluster) Snapshot(context.Context) (*provisioner.Snapshot, error) {
	st := provisioner.StateRunning
	if len(h.cancelled) > 0 || h.endAfter > 0 && !h.signalled.IsZero() && !h.clock.t.Before(h.signalled.Add(h.endAfter)) {
		st = provisioner.StateCompleted
	}
	return &provisioner.Snapshot{Jobs: []provisioner.Job{{ID: "7", State: st, Start: h.started, Comment: "mirage:c-1/0.0"}}}, nil
}

func (h *handoffCluster) Submit(context.Context, provisioner.SubmitRequest) (string, error) {
	panic("handoff never submits")
}

func (h *handoffCluster) Cancel(_ context.Context, id string) error {
	h.cancelled = append(h.cancelled, id)
	return nil
}

func (h *handoffCluster) Signal(_ context.Context, id, sig string) error {
	h.signals = append(h.signals, id+":"+sig+"@"+h.clock.t.Sub(chainT0).String())
	h.signalled = h.clock.t
	return nil
}

// withHandoffCluster returns the cluster and a world around it whose
// environment is env (with MIRAGE_CHAIN=c-1, the predecessor's chain, unless
// env sets it) and whose waiting advances the fake clock.
func withHandoffCluster(endAfter time.Duration, env map[string]string) (*handoffCluster, *Factory) {
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env[provisioner.EnvChain]; !ok {
		env[provisioner.EnvChain] = "c-1"
	}
	clk := &fakeClock{t: chainT0}
	h := &handoffCluster{clock: clk, endAfter: endAfter}
	f := testFactory(env)
	f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return h, nil }
	f.Now = clk.Now
	f.Sleep = func(_ context.Context, d time.Duration) error { clk.t = clk.t.Add(d); return nil }
	return h, f
}

func TestHandoff(t *testing.T) {
	t.Parallel()
	// The predecessor exits 12 s after SIGUSR1; polls at 5 s, 10 s, 15 s: seen ended at 15 s.
	h, f := withHandoffCluster(12*time.Second, map[string]string{provisioner.EnvPrevJob: "7"})
	out, stderr, code := runWith(t, f, "handoff", "--grace", "1m", "--poll", "5s")
	want := "sent SIGUSR1 to predecessor 7; waiting up to 1m0s for it to end\npredecessor 7 ended after 15s: hand-off complete\n"
	if code != 0 || out != want || strings.Join(h.signals, ",") != "7:USR1@0s" {
		t.Fatalf("exit %d, out %q (want %q), err %q, signals %v", code, out, want, stderr, h.signals)
	}

	// It ignores the signal: after the 20 s grace, exit 1; with --cancel, cancelled.
	h, f = withHandoffCluster(0, nil)
	_, stderr, code = runWith(t, f, "handoff", "--job", "7", "--signal", "TERM", "--grace", "20s", "--poll", "5s")
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "predecessor 7 still runs after 20s (it may not trap SIGTERM") || len(h.cancelled) != 0 {
		t.Fatalf("ignored signal: exit %d, %q", code, stderr)
	}
	h, f = withHandoffCluster(0, nil)
	out, _, code = runWith(t, f, "handoff", "--job", "7", "--grace", "20s", "--cancel")
	if code != 0 || !strings.HasSuffix(out, "predecessor 7 still ran after 20s: cancelled\n") || strings.Join(h.cancelled, ",") != "7" {
		t.Fatalf("--cancel: exit %d, %q, cancelled %v", code, out, h.cancelled)
	}

	// No predecessor, or one that is not running: nothing to do.
	_, f = withHandoffCluster(0, map[string]string{provisioner.EnvPrevJob: ""})
	if out, _, code := runWith(t, f, "handoff"); code != 0 || !strings.Contains(out, "nothing to hand off") {
		t.Errorf("no predecessor: exit %d %q", code, out)
	}
	h, f = withHandoffCluster(0, nil)
	if out, _, code := runWith(t, f, "handoff", "--job", "99"); code != 0 || out != "predecessor 99 is not running: nothing to hand off\n" || len(h.signals) != 0 {
		t.Errorf("finished predecessor: exit %d %q signals %v", code, out, h.signals)
	}

	// No chain ($MIRAGE_CHAIN unset, no --chain): nothing is signalled, exit
	// 2 (#50: before, the tag check was skipped and job 7 was signalled
	// whatever it was). --chain gives it.
	h, f = withHandoffCluster(2*time.Second, map[string]string{provisioner.EnvChain: ""})
	if _, stderr, code := runWith(t, f, "handoff", "--job", "7"); code != cmdutil.ExitUsage || !strings.Contains(stderr, "--chain") || len(h.signals) != 0 {
		t.Errorf("no chain: exit %d %q signals %v; want exit %d and none", code, stderr, h.signals, cmdutil.ExitUsage)
	}
	h, f = withHandoffCluster(2*time.Second, map[string]string{provisioner.EnvChain: ""})
	if _, stderr, code := runWith(t, f, "handoff", "--job", "7", "--chain", "c-1", "--settle", "0s"); code != 0 || strings.Join(h.signals, ",") != "7:USR1@0s" {
		t.Errorf("--chain c-1: exit %d %q signals %v", code, stderr, h.signals)
	}

	// A predecessor that started 3 s ago may not have set its trap: with the
	// default --settle 10s the signal goes out 7 s later; --settle 0 sends at once.
	h, f = withHandoffCluster(2*time.Second, nil)
	h.started = chainT0.Add(-3 * time.Second)
	if out, _, code := runWith(t, f, "handoff", "--job", "7", "--poll", "1s"); code != 0 || strings.Join(h.signals, ",") != "7:USR1@7s" || !strings.Contains(out, "ended after 2s") {
		t.Errorf("young predecessor: exit %d %q signals %v", code, out, h.signals)
	}
	h, f = withHandoffCluster(2*time.Second, nil)
	h.started = chainT0.Add(-3 * time.Second)
	if _, _, code := runWith(t, f, "handoff", "--job", "7", "--settle", "0s"); code != 0 || strings.Join(h.signals, ",") != "7:USR1@0s" {
		t.Errorf("--settle 0: exit %d signals %v", code, h.signals)
	}
}
