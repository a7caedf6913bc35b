package placement

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// fragMemo keeps frag-aware figures between placements on a state that
// places job after job (a replay): each node's fragmentation increase per
// demand, valid while the node is unchanged (its generation) and the mix
// the same (its signature). Only the nodes a placement changed are
// measured again, so a replay's decision costs a pass over the cached
// figures rather than the fragmentation of every node.
type fragMemo struct {
	sig  uint64     // signature of the mix the figures are for
	fm   *fragModel // that mix compiled (classes only; scarcity is measured afresh)
	rows map[string]*memoRow
}

type memoRow struct {
	delta []float64 // by node: fragmentation increase (thousandths of a GPU)
	gen   []uint32  // by node: the node's generation + 1 when delta was measured (0 = never)
}

// Memoize makes Place keep frag-aware figures in the state between calls
// (see fragMemo): much faster when placing many jobs one after another on
// the same state, as replays do. The decisions are the same. Place then
// writes to the state, so it must not be called concurrently on it; Clone
// returns a state without the memo.
func (st *State) Memoize() {
	st.memo = &fragMemo{}
	st.ngen = make([]uint32, len(st.names))
}

// touch marks node i changed for the memo.
func (st *State) touch(i int) {
	if st.ngen != nil {
		st.ngen[i]++
	}
}

// mixSig is a signature of a mix's classes.
func mixSig(m *Mix) uint64 {
	h := fnv.New64a()
	var b [32]byte
	for _, c := range m.Classes {
		binary.LittleEndian.PutUint64(b[0:], uint64(c.GPUMilli))
		binary.LittleEndian.PutUint64(b[8:], uint64(c.CPUMilli))
		binary.LittleEndian.PutUint64(b[16:], uint64(c.MemMiB))
		binary.LittleEndian.PutUint64(b[24:], math.Float64bits(c.Weight))
		h.Write(b[:])
		for _, t := range c.GPUTypes {
			h.Write([]byte(t))
			h.Write([]byte{'|'})
		}
		h.Write([]byte{';'})
	}
	return h.Sum64()
}

// model returns the compiled mix (the paper's measure alone with paper,
// for the FGD baseline), reusing the memo's when the mix and the measure are
// the same, and the scarcity of the GPU types as the state stands.
func (st *State) model(m *Mix, paper bool) (*fragModel, *fragMemo) {
	if st.memo == nil {
		return compileMix(st, m, paper).adapt(m), nil
	}
	sig := mixSig(m)
	if paper {
		sig = ^sig
	}
	if st.memo.fm == nil || st.memo.sig != sig {
		st.memo.sig = sig
		st.memo.fm = compileMix(st, m, paper).adapt(m)
		st.memo.rows = map[string]*memoRow{}
		return st.memo.fm, st.memo
	}
	fm := st.memo.fm
	if fm.press != nil {
		fm.press = st.scarcity(fm.classes)
	}
	return fm, st.memo
}

// row returns the memo's figures for a demand.
func (mm *fragMemo) row(d *Demand, n int) *memoRow {
	key := strconv.Itoa(d.GPUMilli) + "," + strconv.Itoa(d.CPUMilli) + "," + strconv.Itoa(d.MemMiB) + "," + strings.Join(d.GPUTypes, "|")
	r := mm.rows[key]
	if r == nil {
		r = &memoRow{delta: make([]float64, n), gen: make([]uint32, n)}
		mm.rows[key] = r
	}
	return r
}
