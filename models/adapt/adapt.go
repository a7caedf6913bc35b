// Package adapt moves a learned policy's decision threshold with the
// hand-offs it has seen end: the online half of a submission policy.
//
// A trained policy submits a successor when its score (the predicted gap,
// in seconds) reaches a threshold tuned on past data. When the cluster
// drifts (a busier month, a quieter week) the realised gaps drift with it:
// successors keep starting hours after their predecessors ended, or hours
// before. Thresholds is a per-chain-size offset learned by stochastic
// subgradient descent on |gap|: every realised gap beyond the dead band
// moves the offset one Step against its sign (a late start lowers the
// threshold, so the next successor is submitted earlier; an early start
// raises it), clamped to ±Max.
//
// Only outcomes that have happened are used: Offset(nodes, now) replays the
// outcomes whose successor started before now, in the order they happened,
// whatever order they were recorded in. The replay evaluation and the
// daemon feed it the same way, so a policy adapts identically in both.
package adapt

import (
	"cmp"
	"slices"
	"time"
)

// Outcome is one finished hand-off: its successor started At, Gap after
// its predecessor ended (negative: before).
type Outcome struct {
	At    time.Time     // when the successor started (the outcome became known)
	Nodes int           // chain size (nodes per segment)
	Gap   time.Duration // successor start − predecessor end
}

// Config sets the learning rule.
type Config struct {
	Step     time.Duration // offset change per outcome beyond the dead band (0: no adaptation)
	DeadBand time.Duration // |gap| at or below this leaves the offset alone
	Max      time.Duration // |offset| bound (0: DefaultMax)
}

// DefaultMax bounds the offset: a quarter of the published 48-hour limit.
const DefaultMax = 12 * time.Hour

// Off is the configuration that never moves the threshold.
var Off = Config{}

// Thresholds holds the outcomes seen so far and answers the offset in force
// at an instant. The zero value is ready to use and never adapts.
type Thresholds struct {
	Config
	outcomes []Outcome // sorted by At (stable for equal times)
}

// New returns Thresholds with cfg.
func New(cfg Config) *Thresholds { return &Thresholds{Config: cfg} }

// Observe records an outcome. Outcomes may arrive in any order; each only
// counts from its At on.
func (t *Thresholds) Observe(o Outcome) {
	i, _ := slices.BinarySearchFunc(t.outcomes, o.At, func(x Outcome, at time.Time) int {
		if x.At.After(at) {
			return 1
		}
		return -1 // equal times: after the ones recorded earlier
	})
	t.outcomes = slices.Insert(t.outcomes, i, o)
}

// Len is the number of outcomes recorded.
func (t *Thresholds) Len() int { return len(t.outcomes) }

// Offset is the threshold offset (seconds of predicted gap, added to the
// trained threshold) for chains of nodes nodes at now: the outcomes of that
// size whose successor started strictly before now, replayed in time order.
func (t *Thresholds) Offset(nodes int, now time.Time) time.Duration {
	if t == nil || t.Step <= 0 {
		return 0
	}
	bound := cmp.Or(t.Max, DefaultMax)
	var off time.Duration
	for _, o := range t.outcomes {
		if !o.At.Before(now) {
			break
		}
		if o.Nodes != nodes {
			continue
		}
		switch {
		case o.Gap > t.DeadBand:
			off -= t.Step
		case o.Gap < -t.DeadBand:
			off += t.Step
		}
		off = min(max(off, -bound), bound)
	}
	return off
}
