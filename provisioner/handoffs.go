package provisioner

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// HandOff is one realised hand-off of a stored chain: its successor
// started Gap after its predecessor ended (negative: before). An online
// policy (models' xgb-online) moves its thresholds with them; the engine
// gives every decision the hand-offs known at its time
// (Observation.HandOffs), from the store, on every backend alike.
type HandOff struct {
	ChainID string        // chain
	Policy  string        // the chain's policy: the one whose decision this outcome judges
	Models  string        // the chain's models directory ("": the default)
	Nodes   int           // nodes per segment
	Segment int           // the successor's index
	Gap     time.Duration // successor start − predecessor end
	// Known is when the outcome became known: the later of the successor's
	// start and the predecessor's end (an overlap is measured only when
	// the predecessor ends).
	Known time.Time
}

// HandOffs lists the hand-offs of records whose gap is known (Gaps), in the
// order they became known (ties by chain and segment).
func HandOffs(records []ChainRecord) []HandOff {
	var out []HandOff
	for i := range records {
		r := &records[i]
		final := map[int]Segment{}
		for _, s := range r.Segments {
			if f, ok := final[s.Index]; !ok || s.Attempt >= f.Attempt {
				final[s.Index] = s
			}
		}
		for idx, s := range final {
			p, ok := final[idx-1]
			if !ok {
				continue
			}
			g, ok := Gap(p, s)
			if !ok {
				continue
			}
			known := s.Start
			if p.End.After(known) {
				known = p.End
			}
			out = append(out, HandOff{ChainID: r.Chain.ID, Policy: r.Chain.Policy, Models: r.Chain.Models, Nodes: r.Chain.Nodes, Segment: idx, Gap: g, Known: known})
		}
	}
	slices.SortFunc(out, func(a, b HandOff) int {
		if c := a.Known.Compare(b.Known); c != 0 {
			return c
		}
		if a.ChainID != b.ChainID {
			if a.ChainID < b.ChainID {
				return -1
			}
			return 1
		}
		return a.Segment - b.Segment
	})
	return out
}

// HandOffLearner is a Policy whose decisions depend on the hand-offs it is
// given (Observation.HandOffs): a replay that plays chains side by side
// must feed it the outcomes of earlier chains in order.
type HandOffLearner interface {
	LearnsFromHandOffs() bool
}

// LearnsFromHandOffs reports whether p is a HandOffLearner that learns.
func LearnsFromHandOffs(p Policy) bool {
	l, ok := p.(HandOffLearner)
	return ok && l.LearnsFromHandOffs()
}

// KnownBy returns the hand-offs (sorted by Known) known at or before now.
func KnownBy(hs []HandOff, now time.Time) []HandOff { return knownBy(hs, now) }

// knownBy returns the hand-offs (sorted by Known) known at or before now.
func knownBy(hs []HandOff, now time.Time) []HandOff {
	n, _ := slices.BinarySearchFunc(hs, now, func(h HandOff, t time.Time) int {
		if h.Known.After(t) {
			return 1
		}
		return -1
	})
	return hs[:n]
}

// handOffs reads the hand-offs of every stored chain, ended ones included:
// the active ones from records (already read), the others from the store
// (in one read when it is a SegmentLister); or those of Engine.HandOffs
// when it is set.
func (e *Engine) handOffs(ctx context.Context, records []ChainRecord) ([]HandOff, error) {
	if e.HandOffs != nil {
		return e.HandOffs(ctx)
	}
	all, err := e.Store.Chains(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("read chains for their hand-offs: %w", err)
	}
	have := make(map[string]bool, len(records))
	for i := range records {
		have[records[i].Chain.ID] = true
	}
	var bulk map[string][]Segment
	if l, ok := e.Store.(SegmentLister); ok && len(all) > len(records) {
		if bulk, err = l.AllSegments(ctx); err != nil {
			return nil, fmt.Errorf("read segments for the hand-offs: %w", err)
		}
	}
	recs := slices.Clone(records)
	for _, c := range all {
		if have[c.ID] {
			continue
		}
		segs, ok := bulk[c.ID]
		if bulk == nil {
			if segs, err = e.Store.Segments(ctx, c.ID); err != nil {
				return nil, fmt.Errorf("read segments of chain %s for its hand-offs: %w", c.ID, err)
			}
		} else if !ok {
			continue // no segment: no hand-off
		}
		recs = append(recs, ChainRecord{Chain: c, Segments: segs})
	}
	return HandOffs(recs), nil
}
