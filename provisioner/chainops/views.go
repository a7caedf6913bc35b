package chainops

import (
	"context"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Gaps maps the position in segs of each index's final attempt to its Gap
// after the final attempt of the previous index, where that is known.
func Gaps(segs []provisioner.Segment) map[int]time.Duration {
	final := map[int]int{}
	for i, s := range segs {
		final[s.Index] = i
	}
	out := map[int]time.Duration{}
	for idx, pos := range final {
		prev, ok := final[idx-1]
		if !ok {
			continue
		}
		if g, ok := provisioner.Gap(segs[prev], segs[pos]); ok {
			out[pos] = g
		}
	}
	return out
}

// ChainView is a stored chain with its segments and the gaps between them:
// what mirage status shows.
type ChainView struct {
	Chain    provisioner.Chain
	Segments []provisioner.Segment
	Gaps     map[int]time.Duration // Gaps(Segments)
}

// LastGap is the gap of the latest segment whose gap is known.
func (v *ChainView) LastGap() (time.Duration, bool) {
	for pos := len(v.Segments) - 1; pos >= 0; pos-- {
		if g, ok := v.Gaps[pos]; ok {
			return g, true
		}
	}
	return 0, false
}

// Totals sums the chain's interruptions and overlaps.
func (v *ChainView) Totals() (interruption, overlap time.Duration) {
	for _, g := range v.Gaps {
		if g > 0 {
			interruption += g
		} else {
			overlap -= g
		}
	}
	return interruption, overlap
}

func chainView(ctx context.Context, st provisioner.Store, c *provisioner.Chain) (*ChainView, error) {
	segs, err := st.Segments(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	return &ChainView{Chain: *c, Segments: segs, Gaps: Gaps(segs)}, nil
}

// ChainStatus reads one chain's view (ErrChainNotFound when there is none).
func ChainStatus(ctx context.Context, st provisioner.Store, id string) (*ChainView, error) {
	c, err := st.Chain(ctx, id)
	if err != nil {
		return nil, err
	}
	return chainView(ctx, st, c)
}

// ChainStatuses reads the view of every chain f lets through, in the
// store's order, and counts those it hid for having ended before
// f.EndedAfter.
func ChainStatuses(ctx context.Context, st provisioner.Store, f StatusFilter) (views []ChainView, hidden int, err error) {
	chains, err := st.Chains(ctx, f.ActiveOnly)
	if err != nil {
		return nil, 0, err
	}
	views = make([]ChainView, 0, len(chains))
	for i := range chains {
		v, err := chainView(ctx, st, &chains[i])
		if err != nil {
			return nil, 0, err
		}
		if v.Chain.State != provisioner.ChainActive && !f.EndedAfter.IsZero() && v.LastActivity().Before(f.EndedAfter) {
			hidden++
			continue
		}
		views = append(views, *v)
	}
	return views, hidden, nil
}

// StatusFilter chooses the chains ChainStatuses lists.
type StatusFilter struct {
	ActiveOnly bool      // only active chains
	EndedAfter time.Time // hide chains that ended before this (zero: show all)
}

// LastActivity is the chain's latest known time: its registration, or a
// segment's submission or end (when an ended chain ended, near enough).
func (v *ChainView) LastActivity() time.Time {
	t := v.Chain.Created
	for _, s := range v.Segments {
		for _, u := range []time.Time{s.Submit, s.Start, s.End} {
			if u.After(t) {
				t = u
			}
		}
	}
	return t
}

// LogStore is a store whose decision and event logs can be read back.
type LogStore interface {
	provisioner.Store
	provisioner.DecisionLog
	provisioner.EventStore
}

// ChainLogView is a chain's decision log and, when asked for, its events.
type ChainLogView struct {
	Chain     provisioner.Chain
	Decisions []provisioner.DecisionRecord
	Events    []provisioner.Event
}

// ChainLog reads a chain's decisions, oldest first, and with events its
// event log (ErrChainNotFound when there is no such chain).
func ChainLog(ctx context.Context, st LogStore, id string, events bool) (*ChainLogView, error) {
	c, err := st.Chain(ctx, id)
	if err != nil {
		return nil, err
	}
	ds, err := st.Decisions(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	v := &ChainLogView{Chain: *c, Decisions: ds}
	if events {
		if v.Events, err = st.Events(ctx, c.ID); err != nil {
			return nil, err
		}
	}
	return v, nil
}
