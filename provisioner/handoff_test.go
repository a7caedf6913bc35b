package provisioner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// handoffCluster holds one running predecessor "7" that exits endAfter
// after it receives a signal (never when endAfter is 0).
type handoffCluster struct {
	now       time.Time
	t0        time.Time
	started   time.Time // predecessor start; zero = unknown
	endAfter  time.Duration
	signalled time.Time
	signals   []string
	cancelled []string
}

func (h *handoffCluster) Snapshot(context.Context) (*Snapshot, error) {
	st := StateRunning
	if len(h.cancelled) > 0 || h.endAfter > 0 && !h.signalled.IsZero() && !h.now.Before(h.signalled.Add(h.endAfter)) {
		st = StateCompleted
	}
	return &Snapshot{Jobs: []Job{{ID: "7", State: st, Start: h.started, User: "alice", Comment: "mirage:c-1/0.0"}}}, nil
}

func (h *handoffCluster) Submit(context.Context, SubmitRequest) (string, error) {
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
func (h *handoffCluster) handoff(o HandoffOptions) (string, error) {
	var lines []string
	now := func() time.Time { return h.now }
	sleep := func(_ context.Context, d time.Duration) error { h.now = h.now.Add(d); return nil }
	err := Handoff(context.Background(), h, now, sleep, o, func(l string) { lines = append(lines, l+"\n") })
	return strings.Join(lines, ""), err
}

func newHandoffCluster(endAfter time.Duration) *handoffCluster {
	t0 := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	return &handoffCluster{now: t0, t0: t0, endAfter: endAfter}
}

func TestHandoff(t *testing.T) {
	t.Parallel()
	opts := func(edit func(*HandoffOptions)) HandoffOptions {
		o := HandoffOptions{Job: "7", Signal: "USR1", Grace: 5 * time.Minute, Poll: 5 * time.Second, Settle: 10 * time.Second}
		edit(&o)
		return o
	}
	// The predecessor exits 12 s after SIGUSR1; polls at 5 s, 10 s, 15 s: seen ended at 15 s.
	h := newHandoffCluster(12 * time.Second)
	out, err := h.handoff(opts(func(o *HandoffOptions) { o.Grace = time.Minute }))
	want := "sent SIGUSR1 to predecessor 7; waiting up to 1m0s for it to end\npredecessor 7 ended after 15s: hand-off complete\n"
	if err != nil || out != want || strings.Join(h.signals, ",") != "7:USR1@0s" {
		t.Fatalf("%v, out %q (want %q), signals %v", err, out, want, h.signals)
	}
	// It ignores the signal: after the 20 s grace, an error; with Cancel, cancelled.
	h = newHandoffCluster(0)
	_, err = h.handoff(opts(func(o *HandoffOptions) { o.Signal, o.Grace = "TERM", 20*time.Second }))
	if err == nil || !strings.Contains(err.Error(), "predecessor 7 still runs after 20s (it may not trap SIGTERM") || len(h.cancelled) != 0 {
		t.Fatalf("ignored signal: %v", err)
	}
	h = newHandoffCluster(0)
	out, err = h.handoff(opts(func(o *HandoffOptions) { o.Grace, o.Cancel = 20*time.Second, true }))
	if err != nil || !strings.HasSuffix(out, "predecessor 7 still ran after 20s: cancelled\n") || strings.Join(h.cancelled, ",") != "7" {
		t.Fatalf("cancel: %v, %q, cancelled %v", err, out, h.cancelled)
	}
	// A predecessor that is not running: nothing to do.
	h = newHandoffCluster(0)
	if out, err := h.handoff(opts(func(o *HandoffOptions) { o.Job = "99" })); err != nil || out != "predecessor 99 is not running: nothing to hand off\n" || len(h.signals) != 0 {
		t.Errorf("finished predecessor: %v %q signals %v", err, out, h.signals)
	}
	// A predecessor that started 3 s ago may not have set its trap: with
	// Settle 10s the signal goes out 7 s later; Settle 0 sends at once.
	h = newHandoffCluster(2 * time.Second)
	h.started = h.t0.Add(-3 * time.Second)
	if out, err := h.handoff(opts(func(o *HandoffOptions) { o.Poll = time.Second })); err != nil || strings.Join(h.signals, ",") != "7:USR1@7s" || !strings.Contains(out, "ended after 2s") {
		t.Errorf("young predecessor: %v %q signals %v", err, out, h.signals)
	}
	h = newHandoffCluster(2 * time.Second)
	h.started = h.t0.Add(-3 * time.Second)
	if _, err := h.handoff(opts(func(o *HandoffOptions) { o.Settle = 0 })); err != nil || strings.Join(h.signals, ",") != "7:USR1@0s" {
		t.Errorf("settle 0: %v signals %v", err, h.signals)
	}
}

// TestHandoffOwnJobsOnly: handoff never signals a predecessor of another
// user, nor one that does not carry the tag of its own chain ($MIRAGE_PREV_JOB
// comes from the job's environment, but the job it names is checked).
func TestHandoffOwnJobsOnly(t *testing.T) {
	t.Parallel()
	for _, o := range []HandoffOptions{
		{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Self: "bob"},
		{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Self: "alice", Chain: "c-2"},
	} {
		h := newHandoffCluster(5 * time.Second)
		_, err := h.handoff(o)
		if !errors.Is(err, ErrForeignJob) || len(h.signals) != 0 || len(h.cancelled) != 0 {
			t.Errorf("%+v: %v, signals %v, cancelled %v; want ErrForeignJob and nothing sent", o, err, h.signals, h.cancelled)
		}
	}
	h := newHandoffCluster(5 * time.Second)
	if _, err := h.handoff(HandoffOptions{Job: "7", Signal: "USR1", Grace: time.Minute, Poll: time.Second, Self: "alice", Chain: "c-1"}); err != nil || len(h.signals) != 1 {
		t.Errorf("own predecessor of the own chain: %v, signals %v", err, h.signals)
	}
}
