package sim

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// stepProfile is a step function of free resources of one partition over
// time: from t[i] until t[i+1], n[i] nodes are idle and g[i] GPUs free.
type stepProfile struct {
	t     []int64
	n     []int32
	g     []int32
	built bool
}

// profile holds one stepProfile per partition plus the reservations made in
// the current backfill pass.
type profile struct {
	parts  []stepProfile
	resv   []resv
	deltas []delta
	freeAt []int64
}

type resv struct {
	from, to int64
	part     int16
	n, g     int32
}

type delta struct {
	t    int64
	n, g int32
}

// split makes sure a step starts at t and returns its index.
func (p *stepProfile) split(t int64) int {
	k := sort.Search(len(p.t), func(i int) bool { return p.t[i] >= t })
	if k < len(p.t) && p.t[k] == t {
		return k
	}
	// step k-1 covers t (k ≥ 1 because t[0] is now and t ≥ now)
	p.t = slices.Insert(p.t, k, t)
	p.n = slices.Insert(p.n, k, p.n[k-1])
	p.g = slices.Insert(p.g, k, p.g[k-1])
	return k
}

// take subtracts n nodes and g GPUs over [from, to).
func (p *stepProfile) take(from, to int64, n, g int32) {
	a := p.split(from)
	b := p.split(to)
	for i := a; i < b; i++ {
		p.n[i] -= n
		p.g[i] -= g
	}
}

// earliest returns the first step start ≥ step i0 from which needN idle
// nodes and needG free GPUs are available for dur, or -1 if none before
// windowEnd.
func (p *stepProfile) earliest(i0 int, dur int64, needN, needG int32, windowEnd int64) int64 {
	i := i0
	for i < len(p.t) {
		s := p.t[i]
		if s >= windowEnd {
			return -1
		}
		e := s + dur
		ok := true
		for k := i; k < len(p.t) && p.t[k] < e; k++ {
			if p.n[k] < needN || p.g[k] < needG {
				ok = false
				i = k + 1
				break
			}
		}
		if ok {
			return s
		}
	}
	return -1
}

func roundUp(t, res int64) int64 {
	if res <= 1 {
		return t
	}
	return (t + res - 1) / res * res
}

// build computes the free-resource profile of partition part from the
// running jobs' planned ends (start + time limit, rounded up to
// bf_resolution) and the reservations of this pass.
func (s *Sim) buildProfile(part int16, res int64) *stepProfile {
	st := s.st
	pr := &s.prof
	if len(pr.parts) < len(st.partNames) {
		pr.parts = make([]stepProfile, len(st.partNames))
	}
	p := &pr.parts[part]
	p.t, p.n, p.g = p.t[:0], p.n[:0], p.g[:0]
	p.built = true
	if cap(pr.freeAt) < len(st.nodeNames) {
		pr.freeAt = make([]int64, len(st.nodeNames))
	}
	freeAt := pr.freeAt[:len(st.nodeNames)]
	member := st.partMember[part]
	dl := pr.deltas[:0]
	for _, r := range s.running {
		sp := s.spec(r)
		d := &s.dyns[r]
		end := roundUp(d.start+sp.limit, res)
		if end <= s.now {
			end = s.now + 1
		}
		var k int32
		excl := st.partExcl[sp.part]
		g := int32(0)
		for _, n := range s.allocPool[d.allocOff : d.allocOff+sp.nodes] {
			if !member[n] {
				continue
			}
			k++
			if excl {
				g += st.nodeGPUs[n]
				freeAt[n] = -1 // a whole-node job: the node frees with it
			} else if freeAt[n] < end {
				freeAt[n] = end
			}
		}
		if k == 0 {
			continue
		}
		if excl {
			dl = append(dl, delta{t: end, n: k, g: g})
		} else {
			dl = append(dl, delta{t: end, g: k * sp.gpn})
		}
	}
	var n0, g0 int32
	for _, n := range st.partNodes[part] {
		g0 += s.nodeFreeG[n]
		if s.nodeJobs[n] == 0 {
			n0++
		} else if freeAt[n] > 0 { // shared node: idle when its last job ends
			dl = append(dl, delta{t: freeAt[n], n: 1})
		}
		freeAt[n] = 0
	}
	slices.SortFunc(dl, func(a, b delta) int { return cmp.Compare(a.t, b.t) })
	p.t = append(p.t, s.now)
	p.n = append(p.n, n0)
	p.g = append(p.g, g0)
	for _, x := range dl {
		last := len(p.t) - 1
		if p.t[last] == x.t {
			p.n[last] += x.n
			p.g[last] += x.g
			continue
		}
		p.t = append(p.t, x.t)
		p.n = append(p.n, p.n[last]+x.n)
		p.g = append(p.g, p.g[last]+x.g)
	}
	pr.deltas = dl
	for _, rv := range pr.resv {
		if overlaps(st, rv.part, part) {
			p.take(rv.from, rv.to, rv.n, rv.g)
		}
	}
	return p
}

func overlaps(st *static, a, b int16) bool {
	return slices.Contains(st.partOverlap[a], b)
}

// backfill is Slurm's sched/backfill pass: pending jobs in priority order
// (at most bf_max_job_test), each placed at the earliest time its whole
// time limit fits in the profile of running jobs' limits plus the
// reservations of higher-priority jobs; a job whose earliest time is now is
// started, any other gets a reservation (if within bf_window) that no
// lower-priority job may encroach on.
func (s *Sim) backfill() {
	s.dirtyBF = false
	if len(s.pending) == 0 {
		return
	}
	cfg := &s.st.cfg
	st := s.st
	res := int64(cfg.BFResolution / time.Second)
	windowEnd := s.now + int64(cfg.BFWindow/time.Second)
	s.sortPending()
	pr := &s.prof
	pr.resv = pr.resv[:0]
	for i := range pr.parts {
		pr.parts[i].built = false
	}
	tested := 0
	startedAny := false
	for _, j := range s.pending {
		d := &s.dyns[j]
		if d.state != stPending || d.held {
			continue
		}
		if tested >= cfg.BFMaxJobTest {
			break
		}
		tested++
		sp := s.spec(j)
		var p *stepProfile
		if len(pr.parts) > int(sp.part) && pr.parts[sp.part].built {
			p = &pr.parts[sp.part]
		} else {
			p = s.buildProfile(sp.part, res)
		}
		needN, needG := int32(0), sp.nodes*sp.gpn
		takeN, takeG := sp.nodes, sp.nodes*sp.gpn
		if st.partExcl[sp.part] {
			needN = sp.nodes
			needG = 0
			takeG = sp.nodes * st.partMaxG[sp.part]
		}
		dur := sp.limit
		t0 := p.earliest(0, dur, needN, needG, windowEnd)
		if t0 == s.now {
			if s.tryAlloc(j) {
				d.est = s.now
				startedAny = true
				s.reserve(sp.part, s.now, roundUp(s.now+dur, res), takeN, takeG)
				continue
			}
			t0 = p.earliest(1, dur, needN, needG, windowEnd)
		}
		if t0 < 0 {
			d.est = 0
			continue
		}
		d.est = t0
		s.reserve(sp.part, t0, roundUp(t0+dur, res), takeN, takeG)
	}
	s.dirtyBF = false // its own starts are already in its plan
	if startedAny {
		out := s.pending[:0]
		for _, j := range s.pending {
			if s.dyns[j].state == stPending {
				out = append(out, j)
			}
		}
		s.pending = out
	}
}

func (s *Sim) reserve(part int16, from, to int64, n, g int32) {
	pr := &s.prof
	pr.resv = append(pr.resv, resv{from: from, to: to, part: part, n: n, g: g})
	for _, q := range s.st.partOverlap[part] {
		if pr.parts[q].built {
			pr.parts[q].take(from, to, n, g)
		}
	}
}
