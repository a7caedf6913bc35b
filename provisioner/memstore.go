package provisioner

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// MemStore is an in-memory Store (with EventStore, DecisionLog and
// TxStore) for the simulator and unit tests. It is safe for concurrent use.
// Values are copied in and out, so callers never share memory with it.
type MemStore struct {
	mu        sync.Mutex
	chains    map[string]Chain
	segments  map[string][]Segment
	decisions []DecisionRecord
	events    []Event
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{chains: map[string]Chain{}, segments: map[string][]Segment{}}
}

var (
	_ Store       = (*MemStore)(nil)
	_ EventStore  = (*MemStore)(nil)
	_ DecisionLog = (*MemStore)(nil)
	_ TxStore     = (*MemStore)(nil)
)

func cloneChain(c Chain) Chain {
	c.Args = slices.Clone(c.Args)
	return c
}

// Chains implements Store; chains come in creation order, then by id.
func (m *MemStore) Chains(ctx context.Context, activeOnly bool) ([]Chain, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Chain, 0, len(m.chains))
	for _, c := range m.chains {
		if !activeOnly || c.State == ChainActive {
			out = append(out, cloneChain(c))
		}
	}
	slices.SortFunc(out, func(a, b Chain) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Chain implements Store.
func (m *MemStore) Chain(ctx context.Context, id string) (*Chain, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.chains[id]
	if !ok {
		return nil, ErrChainNotFound
	}
	c = cloneChain(c)
	return &c, nil
}

// Segments implements Store.
func (m *MemStore) Segments(ctx context.Context, chainID string) ([]Segment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.segments[chainID]), nil
}

// PutChain implements Store.
func (m *MemStore) PutChain(ctx context.Context, c *Chain) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chains[c.ID] = cloneChain(*c)
	return nil
}

// PutSegment implements Store.
func (m *MemStore) PutSegment(ctx context.Context, s *Segment) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	segs := m.segments[s.ChainID]
	for i := range segs {
		if segs[i].Index == s.Index && segs[i].Attempt == s.Attempt {
			segs[i] = *s
			return nil
		}
	}
	segs = append(segs, *s)
	sortSegments(segs)
	m.segments[s.ChainID] = segs
	return nil
}

// Record implements Store.
func (m *MemStore) Record(ctx context.Context, d *DecisionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decisions = append(m.decisions, *d)
	return nil
}

// AddEvent implements EventStore.
func (m *MemStore) AddEvent(ctx context.Context, e *Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, *e)
	return nil
}

// Events implements EventStore.
func (m *MemStore) Events(ctx context.Context, chainID string) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Event
	for _, e := range m.events {
		if e.ChainID == chainID {
			out = append(out, e)
		}
	}
	return out, nil
}

// Decisions implements DecisionLog.
func (m *MemStore) Decisions(ctx context.Context, chainID string) ([]DecisionRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []DecisionRecord
	for _, d := range m.decisions {
		if d.ChainID == chainID {
			out = append(out, d)
		}
	}
	return out, nil
}

// InTx implements TxStore. A MemStore has no rollback: writes made by fn
// before an error stay (unit tests and the simulator never fail midway).
func (m *MemStore) InTx(ctx context.Context, fn func(Store) error) error { return fn(m) }
