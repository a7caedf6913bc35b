package chainops

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// handoffCluster holds one running predecessor "7" that exits endAfter
// after it receives a signal (never when endAfter is 0).
type handoffCluster struct {
	now       time.Time
	t0        time.Time
	started   time.Time     // predecessor start; zero = unknown
	limit     time.Duration // predecessor's time limit; 0 = unknown
	endAfter  time.Duration
	signalled time.Time
	signals   []string
	cancelled []string
}

func (h *handoffCluster) Snapshot(context.Context) (*provisioner.Snapshot, error) {
	st := provisioner.StateRunning
	if len(h.cancelled) > 0 || h.endAfter > 0 && !h.signalled.IsZero() && !h.now.Before(h.signalled.Add(h.endAfter)) {
		st = provisioner.StateCompleted
	}
	return &provisioner.Snapshot{Jobs: []provisioner.Job{{ID: "7", State: st, Start: h.started, TimeLimit: h.limit, User: "alice", Comment: "mirage:c-1/0.0"}}}, nil
}

func (h *handoffCluster) Submit(context.Context, provisioner.SubmitRequest) (string, error) {
	panic("handoff never submits")
}

func (h *handoffCluster) Cancel(_ context.Context, id string) error {
	h.cancelled = append(h.cancelled, id)
	return nil
}

func (h *handoffCluster) Signal(_ context.Context, id, sig string) error {
	h.signals = append(h.signals, id+":"+sig+"@"+h.now.Sub(h.t0).String())
	h.signalled = h.now
	return nil
}

// handoff runs Handoff on the fake cluster with a clock that waiting advances.
func (h *handoffCluster) handoff(o StopOptions) (string, error) {
	var lines []string
	now := func() time.Time { return h.now }
	sleep := func(_ context.Context, d time.Duration) error { h.now = h.now.Add(d); return nil }
	err := StopPredecessor(context.Background(), h, now, sleep, o, func(l string) { lines = append(lines, l+"\n") })
	return strings.Join(lines, ""), err
}

func newHandoffCluster(endAfter time.Duration) *handoffCluster {
	t0 := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	return &handoffCluster{now: t0, t0: t0, endAfter: endAfter}
}

func TestHandoff(t *testing.T) {
	t.Parallel()
	opts := func(edit func(*StopOptions)) StopOptions {
		o := StopOptions{Job: "7", Signal: "USR1", Grace: 5 * time.Minute, Poll: 5 * time.Second, Settle: 10 * time.Second, Chain: "c-1"}
		edit(&o)
		return o
	}
	// The predecessor exits 12 s after SIGUSR1; polls at 5 s, 10 s, 15 s: seen ended at 15 s.
	h := newHandoffCluster(12 * time.Second)
	out, err := h.handoff(opts(func(o *StopOptions) { o.Grace = time.Minute }))
	want := "sent SIGUSR1 to predecessor 7; waiting up to 1m0s for it to end\npredecessor 7 ended after 15s: hand-off complete\n"
	if err != nil || out != want || strings.Join(h.signals, ",") != "7:USR1@0s" {
		t.Fatalf("%v, out %q (want %q), signals %v", err, out, want, h.signals)
	}
	// It ignores the signal: after the 20 s grace, an error; with Cancel, cancelled.
	h = newHandoffCluster(0)
	_, err = h.handoff(opts(func(o *StopOptions) { o.Signal, o.Grace = "TERM", 20*time.Second }))
	if err == nil || !strings.Contains(err.Error(), "predecessor 7 still runs after 20s (it may not trap SIGTERM") || len(h.cancelled) != 0 {
		t.Fatalf("ignored signal: %v", err)
	}
	h = newHandoffCluster(0)
	out, err = h.handoff(opts(func(o *StopOptions) { o.Grace, o.Cancel = 20*time.Second, true }))
	if err != nil || !strings.HasSuffix(out, "predecessor 7 still ran after 20s: cancelled\n") || strings.Join(h.cancelled, ",") != "7" {
		t.Fatalf("cancel: %v, %q, cancelled %v", err, out, h.cancelled)
	}
	// A predecessor that is not running: nothing to do.
	h = newHandoffCluster(0)
	if out, err := h.handoff(opts(func(o *StopOptions) { o.Job = "99" })); err != nil || out != "predecessor 99 is not running: nothing to hand off\n" || len(h.signals) != 0 {
		t.Errorf("finished predecessor: %v %q signals %v", err, out, h.signals)
	}
	// A predecessor that started 3 s ago may not have set its trap: with
	// Settle 10s the signal goes out 7 s later; Settle 0 sends at once.
	h = newHandoffCluster(2 * time.Second)
	h.started = h.t0.Add(-3 * time.Second)
	if out, err := h.handoff(opts(func(o *StopOptions) { o.Poll = time.Second })); err != nil || strings.Join(h.signals, ",") != "7:USR1@7s" || !strings.Contains(out, "ended after 2s") {
		t.Errorf("young predecessor: %v %q signals %v", err, out, h.signals)
	}
	h = newHandoffCluster(2 * time.Second)
	h.started = h.t0.Add(-3 * time.Second)
	if _, err := h.handoff(opts(func(o *StopOptions) { o.Settle = 0 })); err != nil || strings.Join(h.signals, ",") != "7:USR1@0s" {
		t.Errorf("settle 0: %v signals %v", err, h.signals)
	}
}

// TestHandoffMinRun: a predecessor is signalled only once it has run half
// its limit (MinRun), whatever --settle says. By hand: a 3-minute limit,
// started 20 s before the successor runs handoff: half is 1:30, so the
// signal goes out 70 s later (settle 10 s is long past). A 48-hour one
// started 1 h before: 23 h later. Without a known limit, settle alone.
func TestHandoffMinRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit, ran time.Duration
		signal     string
		said       string
	}{
		{3 * time.Minute, 20 * time.Second, "7:USR1@1m10s", "predecessor 7 has run 20s of its 3m0s limit: signalling it once it has run half of it (1m30s), in 1m10s\n"},
		{48 * time.Hour, time.Hour, "7:USR1@23h0m0s", "predecessor 7 has run 1h0m0s of its 48h0m0s limit: signalling it once it has run half of it (24h0m0s), in 23h0m0s\n"},
		{3 * time.Minute, 2 * time.Minute, "7:USR1@0s", ""}, // past half: at once
		{0, 3 * time.Second, "7:USR1@7s", ""},               // limit unknown: settle only
	} {
		h := newHandoffCluster(2 * time.Second)
		h.started, h.limit = h.t0.Add(-c.ran), c.limit
		out, err := h.handoff(StopOptions{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Settle: 10 * time.Second, Chain: "c-1"})
		if err != nil || strings.Join(h.signals, ",") != c.signal || !strings.HasPrefix(out, c.said+"sent SIGUSR1") {
			t.Errorf("limit %s, ran %s: %v, signals %v (want %s), out %q", c.limit, c.ran, err, h.signals, c.signal, out)
		}
	}
}

// TestHandoffOwnJobsOnly: handoff never signals a predecessor of another
// user, nor one that does not carry the tag of its own chain ($MIRAGE_PREV_JOB
// comes from the job's environment, but the job it names is checked), nor
// any job when no chain is given (#50: before, with $MIRAGE_CHAIN unset,
// the tag check was skipped and any job of the user's was signalled).
func TestHandoffOwnJobsOnly(t *testing.T) {
	t.Parallel()
	for _, o := range []StopOptions{
		{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Self: "bob"},
		{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Self: "alice", Chain: "c-2"},
		{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Self: "alice"},
	} {
		h := newHandoffCluster(5 * time.Second)
		_, err := h.handoff(o)
		if !errors.Is(err, provisioner.ErrForeignJob) || len(h.signals) != 0 || len(h.cancelled) != 0 {
			t.Errorf("%+v: %v, signals %v, cancelled %v; want ErrForeignJob and nothing sent", o, err, h.signals, h.cancelled)
		}
	}
	h := newHandoffCluster(5 * time.Second)
	if _, err := h.handoff(StopOptions{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Self: "alice", Chain: "c-1"}); err != nil || len(h.signals) != 1 {
		t.Errorf("own predecessor of the own chain: %v, signals %v", err, h.signals)
	}
}
