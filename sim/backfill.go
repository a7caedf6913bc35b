package sim

import (
	"cmp"
	"slices"
	"time"
)

// stepProfile is a step function of free resources of one partition over
// time: from steps[i].t until steps[i+1].t, steps[i].n nodes are idle and
// steps[i].g GPUs free. Step starts strictly increase; steps[0].t is the
// pass's now and the last step lasts forever.
type stepProfile struct {
	steps  []step
	built  bool
	bounds []bound // what this pass's earliest calls found (see bound)
}

// step is one piece of a stepProfile.
type step struct {
	t    int64
	n, g int32
}

// profile holds one stepProfile per partition plus the reservations made in
// the current backfill pass.
type profile struct {
	parts  []stepProfile
	resv   []resv
	pins   []pinResv // this pass's reservations on required nodes
	deltas []step    // buildProfile's scratch: resources freed at t
	freeAt []int64
	free   []partFree // startsNothing's scratch, per partition
	tested []int32    // per user: jobs this pass tested (bf_max_job_user)
	held   []bool     // scratch: nodes pinned over a span (pinnedOver)

	// The node-by-node planner of shared partitions (planNodes).
	nodeEnds    [][]nodeEnd // per node: what running jobs free on it at their planned ends, ascending
	endsBuilt   bool        // nodeEnds is this pass's
	taken       [][]span    // per node: this pass's reservations of shared-partition jobs' nodes
	takenAny    bool
	cn          []int32 // planNodes' scratch: the nodes it may use,
	cf, ce      []int64 // when each has room for the job, and when it is first also clear of reservations
	cand        []int64 // planNodes' scratch: candidate starts
	pick        []int32 // planNodes' result
	spanScratch []span  // reservedSpans' scratch
}

// nodeEnd is what a running job frees on one node at its planned end.
type nodeEnd struct {
	t    int64
	g, c int32
}

// span is a reservation of a node over [from, to).
type span struct{ from, to int64 }

// pinResv is a reservation of the nodes a job's node list requires
// (--nodelist): sched/backfill plans such a job on exactly those nodes
// (_add_reservation removes them from its node map over [from, to)), so no
// lower-priority job may be planned or started on them then.
type pinResv struct {
	from, to int64
	nodes    []bool // the job's allowed mask (shared with its spec, never written)
}

// partFree sums up what is free now on a partition's nodes.
type partFree struct {
	done       bool
	idle       int32 // nodes without jobs
	room       int32 // nodes with a free CPU (every job asks at least one)
	maxG, maxC int32 // the most GPUs and CPUs free on one of those
}

type resv struct {
	from, to int64
	part     int16
	n, g     int32
}

// bound records that, in the current pass, a job needing needN nodes and
// needG GPUs for dur could start no earlier than t (-1: not within
// bf_window). The profile only loses resources during a pass (reservations
// and starts take, nothing gives back), so a later job that needs at least
// as many nodes and GPUs for at least as long cannot start before t either:
// any start that fits it would have fitted the earlier job, at that step's
// start or earlier. earliest may therefore begin its scan at t, and skip it
// when t is -1, and still return exactly what a scan from now returns.
type bound struct {
	needN, needG int32
	dur, t       int64
	at           int // the index of t's step when recorded (steps are only inserted during a pass: it can only have moved right)
}

// maxBounds caps the shapes remembered per pass (a lookup scans them all);
// forgetting a bound only costs a longer scan.
const maxBounds = 32

// lowerBound returns the index of the first step a job of the shape could
// start at (0 if no bound applies) and the index of the shape's own bound
// (-1 if none), or ok=false if it cannot start within the window. The
// bounds are kept in ascending needN, so the scan stops at the first that
// needs more nodes; what it returns does not depend on the bounds' order.
func (p *stepProfile) lowerBound(needN, needG int32, dur int64) (from, own int, ok bool) {
	own = -1
	var lb int64
	hint := 0
	for i := range p.bounds {
		b := &p.bounds[i]
		if b.needN > needN {
			break
		}
		if b.needG <= needG && b.dur <= dur {
			if b.t < 0 {
				return 0, -1, false
			}
			if b.t > lb {
				lb, hint = b.t, b.at
			}
			if b.needN == needN && b.needG == needG && b.dur == dur {
				own = i
			}
		}
	}
	// lb's step is where it was recorded or a few steps right of it (any
	// bound's at is at or left of its t's step, so the scan ends at the
	// same step whichever bound of the same t gave the hint)
	for from = hint; from < len(p.steps) && p.steps[from].t < lb; from++ {
	}
	return from, own, true
}

// setBound records what earliest found for a job of the shape (at, the
// index of its step, or -1) whose own bound is at index own (-1: none yet).
// A shape that lowerBound found cannot start needs no bound of its own: the
// one that said so covers it.
func (p *stepProfile) setBound(own int, needN, needG int32, dur int64, at int) {
	t := p.startOf(at)
	switch {
	case own >= 0:
		p.bounds[own].t, p.bounds[own].at = t, at // not earlier than the t it replaces, or -1
	case len(p.bounds) < maxBounds:
		i := len(p.bounds)
		for i > 0 && p.bounds[i-1].needN > needN {
			i--
		}
		p.bounds = slices.Insert(p.bounds, i, bound{needN: needN, needG: needG, dur: dur, t: t, at: at})
	}
}

// search returns the index of the first step starting at or after t
// (len(steps) if none).
func (p *stepProfile) search(t int64) int {
	lo, hi := 0, len(p.steps)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.steps[m].t < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// startOf returns step i's start, or -1 for i = -1.
func (p *stepProfile) startOf(i int) int64 {
	if i < 0 {
		return -1
	}
	return p.steps[i].t
}

// split makes sure a step starts at t (≥ steps[0].t) and returns its index.
func (p *stepProfile) split(t int64) int {
	lo := p.search(t)
	if lo < len(p.steps) && p.steps[lo].t == t {
		return lo
	}
	// step lo-1 covers t (lo ≥ 1 because steps[0].t is now and t ≥ now)
	prev := p.steps[lo-1]
	prev.t = t
	p.steps = slices.Insert(p.steps, lo, prev)
	return lo
}

// take subtracts n nodes and g GPUs over [from, to).
func (p *stepProfile) take(from, to int64, n, g int32) {
	i := p.split(from)
	p.takeAt(i, i, to, n, g)
}

// takeAt subtracts n nodes and g GPUs from step i (which starts at from)
// until to, where steps i to k-1 are known to start before to.
func (p *stepProfile) takeAt(i, k int, to int64, n, g int32) {
	span := p.steps[i:k]
	for x := range span {
		span[x].n -= n
		span[x].g -= g
	}
	for i = k; i < len(p.steps) && p.steps[i].t < to; i++ {
		p.steps[i].n -= n
		p.steps[i].g -= g
	}
	if i == len(p.steps) || p.steps[i].t > to {
		// the last step taken from runs past to: split it there, the
		// part from to on keeping its resources
		rest := p.steps[i-1]
		rest.t, rest.n, rest.g = to, rest.n+n, rest.g+g
		p.steps = slices.Insert(p.steps, i, rest)
	}
}

// earliest returns the index at of the first step, from step i0 on, from
// whose start needN idle nodes and needG free GPUs are available for dur,
// and the index end of the first step starting at or after that start plus
// dur; at = -1 if no such step starts before windowEnd. A candidate start
// fails at the first step k of its span short of resources, and so does
// every candidate up to k: the next one tried is k+1, so the scan is linear
// in the steps.
func (p *stepProfile) earliest(i0 int, dur int64, needN, needG int32, windowEnd int64) (at, end int) {
	st := p.steps
	i := i0
	for i < len(st) {
		s := st[i].t
		if s >= windowEnd {
			return -1, -1
		}
		e := s + dur
		k := i
		for k < len(st) && st[k].t < e && st[k].n >= needN && st[k].g >= needG {
			k++
		}
		if k == len(st) || st[k].t >= e {
			return i, k // every step of [s, e) has the resources
		}
		i = k + 1
	}
	return -1, -1
}

func roundUp(t, res int64) int64 {
	if res <= 1 {
		return t
	}
	return (t + res - 1) / res * res
}

// runEnd is a running job and when the backfill planner expects it to
// end: its start plus its time limit, rounded up to bf_resolution.
type runEnd struct {
	end  int64
	j    int32
	gpus int32 // GPUs of its nodes (all of them: a whole-node job frees them all)
}

// addByEnd inserts running job r into s.byEnd, which lists the running jobs
// in ascending planned end (ties in any order), so that buildProfile need
// not sort them at every pass.
func (s *Sim) addByEnd(r int32) {
	res := int64(s.st.cfg.BFResolution / time.Second)
	d, sp := &s.dyns[r], s.spec(r)
	end := roundUp(d.start+sp.limit, res)
	var gpus int32
	for _, n := range s.allocPool[d.allocOff : d.allocOff+sp.nodes] {
		gpus += s.st.nodeGPUs[n]
	}
	k, _ := slices.BinarySearchFunc(s.byEnd, end, func(q runEnd, t int64) int {
		if q.end <= t {
			return -1 // after every job ending at or before end
		}
		return 1
	})
	s.byEnd = slices.Insert(s.byEnd, k, runEnd{end: end, j: r, gpus: gpus})
}

// removeByEnd removes job r from s.byEnd.
func (s *Sim) removeByEnd(r int32) {
	for i, q := range s.byEnd {
		if q.j == r {
			s.byEnd = slices.Delete(s.byEnd, i, i+1)
			return
		}
	}
}

// buildProfile computes the free-resource profile of partition part from the
// running jobs' planned ends (s.byEnd) and the reservations of this pass.
func (s *Sim) buildProfile(part int16) *stepProfile {
	st := s.st
	pr := &s.prof
	if len(pr.parts) < len(st.partNames) {
		pr.parts = make([]stepProfile, len(st.partNames))
	}
	p := &pr.parts[part]
	p.steps = p.steps[:0]
	p.bounds = p.bounds[:0]
	p.built = true
	if cap(pr.freeAt) < len(st.nodeNames) {
		pr.freeAt = make([]int64, len(st.nodeNames))
	}
	freeAt := pr.freeAt[:len(st.nodeNames)]
	member := st.partMember[part]
	dl := pr.deltas[:0]
	for _, q := range s.byEnd { // ascending end, so dl is sorted too
		sp := s.spec(q.j)
		d := &s.dyns[q.j]
		end := q.end
		if end <= s.now {
			end = s.now + 1 // overdue: all of them come first, and the rest end after now
		}
		excl := st.partExcl[sp.part]
		if excl && sp.part == part {
			// a whole-node job of this partition: all its nodes are members
			// and free with it (no shared job can be on them: see below)
			dl = append(dl, step{t: end, n: sp.nodes, g: q.gpus})
			continue
		}
		var k int32
		g := int32(0)
		for _, n := range s.allocPool[d.allocOff : d.allocOff+sp.nodes] {
			if !member[n] {
				continue
			}
			k++
			if excl {
				g += st.nodeGPUs[n]
				// a whole-node job: the node frees with it. (It holds the
				// node alone: it started only on a node without jobs, and
				// took all its CPUs, which every job asks at least one of.)
				freeAt[n] = -1
			} else if freeAt[n] < end {
				freeAt[n] = end
			}
		}
		if k == 0 {
			continue
		}
		if excl {
			dl = append(dl, step{t: end, n: k, g: g})
		} else {
			dl = append(dl, step{t: end, g: k * sp.gpn})
		}
	}
	sorted := len(dl)
	var n0, g0 int32
	for _, n := range st.partNodes[part] {
		g0 += s.nodeFreeG[n]
		if s.nodeJobs[n] == 0 {
			n0++
		} else if freeAt[n] > 0 { // shared node: idle when its last job ends
			dl = append(dl, step{t: freeAt[n], n: 1})
		}
		freeAt[n] = 0
	}
	if len(dl) > sorted {
		// shared nodes' idle times are not in end order (sums at equal
		// times are integers: the order among equal t does not matter)
		slices.SortFunc(dl, func(a, b step) int { return cmp.Compare(a.t, b.t) })
	}
	p.steps = append(p.steps, step{t: s.now, n: n0, g: g0})
	for _, x := range dl {
		last := &p.steps[len(p.steps)-1]
		if last.t == x.t {
			last.n += x.n
			last.g += x.g
			continue
		}
		p.steps = append(p.steps, step{t: x.t, n: last.n + x.n, g: last.g + x.g})
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
// (at most bf_max_job_test, and bf_max_job_user per user), each placed at
// the earliest time its whole time limit fits in the profile of running
// jobs' limits plus the reservations of higher-priority jobs; a job whose
// earliest time is now is started, any other gets a reservation (if within
// bf_window, and unless it is younger than bf_min_age_reserve) that no
// lower-priority job may encroach on. A job of a shared partition is
// planned and reserved node by node (backfill_nodes.go); in an exclusive
// partition, node counts plan a job, and one with required nodes (its
// node list) is planned and reserved on those nodes. Reservations made by
// counts hold no particular node, so a shared partition's plans do not
// see those of an exclusive partition sharing its nodes (a cluster that
// mixes the two on the same nodes is planned optimistically there).
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
	if s.plansUnread && s.startsNothing() {
		s.bfSkipped++
		return // it would only plan, and nobody reads the plans
	}
	pr := &s.prof
	pr.resv = pr.resv[:0]
	pr.pins = pr.pins[:0]
	for i := range pr.parts {
		pr.parts[i].built = false
	}
	pr.endsBuilt = false
	if pr.takenAny {
		for n := range pr.taken {
			pr.taken[n] = pr.taken[n][:0]
		}
		pr.takenAny = false
	}
	startedAny := false
	s.eachTested(func(j int32) bool {
		d := &s.dyns[j]
		sp := s.spec(j)
		if !st.partExcl[sp.part] {
			if s.backfillShared(j, res, windowEnd) {
				startedAny = true
			}
			return true
		}
		var p *stepProfile
		if len(pr.parts) > int(sp.part) && pr.parts[sp.part].built {
			p = &pr.parts[sp.part]
		} else {
			p = s.buildProfile(sp.part)
		}
		needN, needG := int32(0), sp.nodes*sp.gpn
		takeN, takeG := sp.nodes, sp.nodes*sp.gpn
		if st.partExcl[sp.part] {
			needN = sp.nodes
			needG = 0
			takeG = sp.nodes * st.partMaxG[sp.part]
		}
		dur := sp.limit
		// the job fits steps at to end-1, from the start of step at
		at, end := -1, -1
		if sp.required {
			at, end = s.planRequired(j, p, needN, needG, res, windowEnd)
		} else if from, own, ok := p.lowerBound(needN, needG, dur); ok {
			at, end = p.earliest(from, dur, needN, needG, windowEnd)
			p.setBound(own, needN, needG, dur, at)
		}
		t0 := p.startOf(at)
		if t0 == s.now {
			if s.startNow(j, res) {
				startedAny = true
				s.reserve(sp.part, at, end, s.now, roundUp(s.now+dur, res), takeN, takeG)
				return true
			}
			at, end = p.earliest(1, dur, needN, needG, windowEnd)
			t0 = p.startOf(at)
		}
		if t0 < 0 {
			d.est = 0
			return true
		}
		d.est = t0
		if st.minAgeRes > 0 && s.now-d.elig < st.minAgeRes {
			return true // too young for a reservation (bf_min_age_reserve): it may only start at once
		}
		to := roundUp(t0+dur, res)
		s.reserve(sp.part, at, end, t0, to, takeN, takeG)
		if sp.required {
			pr.pins = append(pr.pins, pinResv{from: t0, to: to, nodes: sp.allowed})
		}
		return true
	})
	s.dirtyBF = false // its own starts are already in its plan
	if startedAny {
		out := s.pending[:0]
		sorted := 0 // of the jobs kept, those of the sorted prefix (a callback may have appended others)
		for i, j := range s.pending {
			if s.dyns[j].state == stPending {
				out = append(out, j)
				if i < s.sortedLen {
					sorted++
				}
			}
		}
		s.pending = out
		s.sortedLen = sorted
	}
}

// startNow starts job j in a backfill pass, off the nodes this pass
// reserved for higher-priority jobs over its time limit, and keeps the
// pass's node ends current; it reports whether j started.
func (s *Sim) startNow(j int32, res int64) bool {
	s.passHeld = s.pinnedOver(s.now, roundUp(s.now+s.spec(j).limit, res))
	started := s.tryAlloc(j)
	s.passHeld = nil
	if started {
		s.dyns[j].est = s.now
		s.noteStart(j, res)
	}
	return started
}

// eachTested calls fn, in priority order, with the pending jobs a
// backfill pass tests, until fn returns false: eligible ones, at most
// bf_max_job_user of one user (the user's further jobs are skipped, and do
// not count towards the next limit) and bf_max_job_test in all. s.pending
// must be sorted; fn may start jobs (they stay listed until the pass ends).
func (s *Sim) eachTested(fn func(j int32) bool) {
	cfg := &s.st.cfg
	perUser := int32(cfg.BFMaxJobUser)
	var tested []int32
	if perUser > 0 {
		tested = slices.Grow(s.prof.tested[:0], len(s.users))[:len(s.users)]
		clear(tested)
		s.prof.tested = tested
	}
	n := 0
	for _, j := range s.pending {
		d := &s.dyns[j]
		if d.state != stPending || d.held {
			continue
		}
		if n >= cfg.BFMaxJobTest {
			break
		}
		if perUser > 0 {
			u := s.spec(j).user
			if tested[u] >= perUser {
				continue // backfill.c: "have already checked N jobs for user"
			}
			tested[u]++
		}
		n++
		if !fn(j) {
			return
		}
	}
}

// planRequired plans job j, whose node list names the nodes it requires,
// on exactly those nodes in profile p (its partition's): from when they are
// all free (their jobs' planned ends) and not reserved for a higher-priority
// job's node list over its span, at the earliest step the counts allow. It
// returns earliest's at and end (-1: not within windowEnd). Its start says
// nothing of its shape's, so it records no bound.
func (s *Sim) planRequired(j int32, p *stepProfile, needN, needG int32, res, windowEnd int64) (at, end int) {
	sp := s.spec(j)
	dur := sp.limit
	t := s.requiredFree(j, res)
	for {
		split := -1
		if t > s.now {
			split = p.split(t)
		}
		from, _, ok := p.lowerBound(needN, needG, dur)
		if !ok {
			return -1, -1
		}
		at, end = p.earliest(max(from, split), dur, needN, needG, windowEnd)
		if at < 0 {
			return -1, -1
		}
		t0 := p.startOf(at)
		busy := s.pinnedUntil(sp.allowed, t0, roundUp(t0+dur, res))
		if busy <= t0 {
			return at, end
		}
		t = busy // after the reservations in the way, which end later than t0: t grows
	}
}

// pinnedUntil returns the latest end of this pass's reservations on
// required nodes that hold one of the nodes in mask during [from, to),
// or 0 if none does.
func (s *Sim) pinnedUntil(mask []bool, from, to int64) int64 {
	var until int64
	for _, r := range s.prof.pins {
		if r.from >= to || r.to <= from || r.to <= until {
			continue
		}
		for n, on := range r.nodes {
			if on && mask[n] {
				until = r.to
				break
			}
		}
	}
	return until
}

// pinnedOver returns the nodes this pass reserved for a higher-priority
// job at some time in [from, to), for its node list or for a plan on a
// shared partition's nodes (scratch, valid until the next call), or nil if
// there are none.
func (s *Sim) pinnedOver(from, to int64) []bool {
	pr := &s.prof
	var held []bool
	hold := func() {
		if held == nil {
			held = slices.Grow(pr.held[:0], len(s.st.nodeNames))[:len(s.st.nodeNames)]
			clear(held)
			pr.held = held
		}
	}
	for _, r := range pr.pins {
		if r.from >= to || r.to <= from {
			continue
		}
		hold()
		for n, on := range r.nodes {
			held[n] = held[n] || on
		}
	}
	if pr.takenAny {
		for n, spans := range pr.taken {
			for _, r := range spans {
				if r.from < to && r.to > from {
					hold()
					held[n] = true
					break
				}
			}
		}
	}
	return held
}

// reserve takes n nodes and g GPUs over [from, to) for a job of partition
// part, in every built profile of a partition sharing nodes with it; in
// part's own profile, from is the start of step at and steps at to end-1
// start before to (what earliest returned). It is kept for the profiles
// built later in the pass, if any of them shares nodes with part.
func (s *Sim) reserve(part int16, at, end int, from, to int64, n, g int32) {
	pr := &s.prof
	later := false
	for _, q := range s.st.partOverlap[part] {
		switch {
		case q == part:
			pr.parts[q].takeAt(at, end, to, n, g)
		case pr.parts[q].built:
			pr.parts[q].take(from, to, n, g)
		default:
			later = true
		}
	}
	if later {
		pr.resv = append(pr.resv, resv{from: from, to: to, part: part, n: n, g: g})
	}
}

// startsNothing reports whether no job that a backfill pass would test can
// start now on the resources free now, reservations aside. It is
// conservative: it may say false when nothing can start, never true when
// something can. Such a pass starts nothing; all it does is plan the
// tested jobs' starts (squeue --start).
func (s *Sim) startsNothing() bool {
	st := s.st
	free := s.prof.free
	if len(free) < len(st.partNames) {
		free = make([]partFree, len(st.partNames))
		s.prof.free = free
	}
	clear(free)
	nothing := true
	s.eachTested(func(j int32) bool {
		sp := s.spec(j)
		f := &free[sp.part]
		if !f.done {
			s.sumFree(sp.part, f)
		}
		if st.partExcl[sp.part] {
			nothing = sp.nodes > f.idle
		} else {
			nothing = !(sp.nodes <= f.room && sp.gpn <= f.maxG && sp.cpn <= f.maxC)
		}
		return nothing
	})
	return nothing
}

// sumFree sums up the resources free now on partition part's nodes.
func (s *Sim) sumFree(part int16, f *partFree) {
	*f = partFree{done: true}
	for _, n := range s.st.partNodes[part] {
		if s.nodeJobs[n] == 0 {
			f.idle++
		}
		if c := s.nodeFreeC[n]; c > 0 {
			f.room++
			f.maxC = max(f.maxC, c)
			f.maxG = max(f.maxG, s.nodeFreeG[n])
		}
	}
}

// requiredFree is when every node job j's node list allows is free, as the
// backfill planner expects it: the latest planned end (start + limit,
// rounded up to res) of the jobs running on them; now when they are free.
func (s *Sim) requiredFree(j int32, res int64) int64 {
	allowed := s.spec(j).allowed
	t := s.now
	for _, r := range s.running {
		d := &s.dyns[r]
		rs := s.spec(r)
		for _, n := range s.allocPool[d.allocOff : d.allocOff+rs.nodes] {
			if allowed[n] {
				t = max(t, roundUp(d.start+rs.limit, res))
				break
			}
		}
	}
	return t
}
