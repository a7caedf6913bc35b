package adapt

import (
	"testing"
	"time"
)

var t0 = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

func TestOffsetUsesOnlyPastOutcomes(t *testing.T) {
	th := New(Config{Step: 30 * time.Minute, DeadBand: 15 * time.Minute})
	// two late starts of 8-node successors at +1 h and +2 h
	th.Observe(Outcome{At: t0.Add(time.Hour), Nodes: 8, Gap: 5 * time.Hour})
	th.Observe(Outcome{At: t0.Add(2 * time.Hour), Nodes: 8, Gap: 3 * time.Hour})
	// an outcome from the future (at +10 h), recorded before the question at +3 h
	th.Observe(Outcome{At: t0.Add(10 * time.Hour), Nodes: 8, Gap: -9 * time.Hour})
	if got, want := th.Offset(8, t0.Add(3*time.Hour)), -time.Hour; got != want {
		t.Errorf("offset at +3 h = %s, want %s (two late starts, the +10 h outcome not yet happened)", got, want)
	}
	// at exactly +10 h the outcome has not happened before now: still ignored
	if got, want := th.Offset(8, t0.Add(10*time.Hour)), -time.Hour; got != want {
		t.Errorf("offset at +10 h = %s, want %s", got, want)
	}
	// after it, it counts: −1 h + 30 min
	if got, want := th.Offset(8, t0.Add(11*time.Hour)), -30*time.Minute; got != want {
		t.Errorf("offset at +11 h = %s, want %s", got, want)
	}
	// other sizes are untouched
	if got := th.Offset(1, t0.Add(11*time.Hour)); got != 0 {
		t.Errorf("1-node offset = %s, want 0", got)
	}
	// before anything happened
	if got := th.Offset(8, t0); got != 0 {
		t.Errorf("offset at t0 = %s, want 0", got)
	}
}

func TestOffsetOrderOfRecordingDoesNotMatter(t *testing.T) {
	// The clamp makes the order of happening matter: +, +, − from 0 with
	// Max one step gives +1, +1 (clamped), 0; recorded in reverse it must
	// still be replayed in time order.
	cfg := Config{Step: time.Hour, Max: time.Hour}
	a, b := New(cfg), New(cfg)
	outs := []Outcome{
		{At: t0.Add(1 * time.Hour), Nodes: 1, Gap: -2 * time.Hour},
		{At: t0.Add(2 * time.Hour), Nodes: 1, Gap: -2 * time.Hour},
		{At: t0.Add(3 * time.Hour), Nodes: 1, Gap: 2 * time.Hour},
	}
	for i := range outs {
		a.Observe(outs[i])
		b.Observe(outs[len(outs)-1-i])
	}
	for _, now := range []time.Duration{90 * time.Minute, 150 * time.Minute, 4 * time.Hour} {
		if x, y := a.Offset(1, t0.Add(now)), b.Offset(1, t0.Add(now)); x != y {
			t.Errorf("at +%s: %s recorded in order, %s in reverse", now, x, y)
		}
	}
	if got := a.Offset(1, t0.Add(4*time.Hour)); got != 0 {
		t.Errorf("final offset %s, want 0 (up, clamped, down)", got)
	}
}

func TestDeadBandAndOff(t *testing.T) {
	th := New(Config{Step: time.Hour, DeadBand: 15 * time.Minute})
	th.Observe(Outcome{At: t0, Nodes: 1, Gap: 15 * time.Minute})  // at the band: ignored
	th.Observe(Outcome{At: t0, Nodes: 1, Gap: -10 * time.Minute}) // inside: ignored
	if got := th.Offset(1, t0.Add(time.Hour)); got != 0 {
		t.Errorf("offset %s, want 0 (both outcomes within the dead band)", got)
	}
	var off Thresholds
	off.Observe(Outcome{At: t0, Nodes: 1, Gap: 9 * time.Hour})
	if got := off.Offset(1, t0.Add(time.Hour)); got != 0 {
		t.Errorf("zero Thresholds adapted: %s", got)
	}
	var nilT *Thresholds
	if got := nilT.Offset(1, t0); got != 0 {
		t.Errorf("nil Thresholds: %s", got)
	}
}
