package sim

import "slices"

// The backfill planner of shared partitions (OverSubscribe not EXCLUSIVE,
// select/cons_tres): jobs take GPUs and CPUs of nodes that other jobs may
// share, so free resources summed over a partition say little of where a
// job fits. sched/backfill plans such a job as the select plugin's
// will-run test does, node by node: each node has room for it once enough
// of its running jobs reach their planned ends (start + limit, rounded up
// to bf_resolution); the job starts at the earliest time enough such nodes
// are also clear of the reservations of higher-priority jobs, and if that
// is later than now its chosen nodes are reserved, whole, over its time
// limit (backfill.c's _add_reservation takes the job's nodes out of the
// node_space map's available bitmap). A lower-priority job may then start
// on any other node with room, which counts of a partition's free GPUs
// cannot tell: a reservation taking the partition's last free GPUs in
// counts held back small jobs that real Slurm started beside it (issue 46's
// run on a real slurmctld).

// backfillShared is one backfill step for job j of a shared partition: it
// starts j now if its plan says so, or reserves the nodes of its plan. It
// reports whether j started.
func (s *Sim) backfillShared(j int32, res, windowEnd int64) bool {
	d := &s.dyns[j]
	sp := s.spec(j)
	dur := sp.limit
	t0, nodes := s.planNodes(j, s.now, res, windowEnd)
	if t0 == s.now {
		if s.startNow(j, res) {
			s.reserveElsewhere(sp.part, s.now, roundUp(s.now+dur, res), sp.nodes, sp.nodes*sp.gpn, true)
			return true
		}
		// the plan and tryAlloc read the same free resources and the same
		// reservations, so this is not expected; plan it later instead
		t0, nodes = s.planNodes(j, s.now+1, res, windowEnd)
	}
	if t0 < 0 {
		d.est = 0
		return false
	}
	d.est = t0
	if s.st.minAgeRes > 0 && s.now-d.elig < s.st.minAgeRes {
		return false // too young for a reservation (bf_min_age_reserve)
	}
	to := roundUp(t0+dur, res)
	pr := &s.prof
	if len(pr.taken) < len(s.st.nodeNames) {
		pr.taken = make([][]span, len(s.st.nodeNames))
	}
	for _, n := range nodes {
		pr.taken[n] = append(pr.taken[n], span{from: t0, to: to})
	}
	pr.takenAny = true
	s.reserveElsewhere(sp.part, t0, to, sp.nodes, sp.nodes*sp.gpn, false)
	return false
}

// planNodes plans job j of a shared partition no earlier than from: the
// earliest start, before windowEnd, at which sp.nodes of the nodes it may
// use have room for it (nodeRoom) and are clear of this pass's
// reservations over its time limit, and the first such nodes in node
// order (scratch, valid until the next call); -1 if there is none.
func (s *Sim) planNodes(j int32, from, res, windowEnd int64) (int64, []int32) {
	sp := s.spec(j)
	pr := &s.prof
	s.buildNodeEnds()
	k := int(sp.nodes)
	dur := sp.limit
	cn, cf, ce := pr.cn[:0], pr.cf[:0], pr.ce[:0]
	for _, n := range s.st.partNodes[sp.part] {
		if sp.allowed != nil && !sp.allowed[n] {
			continue
		}
		f := s.nodeRoom(n, sp.gpn, sp.cpn)
		if f < 0 {
			continue // it never has room for the job
		}
		f = max(f, from)
		cn, cf, ce = append(cn, n), append(cf, f), append(ce, s.nodeClear(n, f, dur, res))
	}
	pr.cn, pr.cf, pr.ce = cn, cf, ce
	if len(cn) < k {
		return -1, nil
	}
	// A node is usable at t only if its first clear start is at or before
	// t, so no start comes before the k-th smallest; after that, a node
	// becomes usable at its first clear start or at the end of one of its
	// reservations.
	cand := append(pr.cand[:0], ce...)
	slices.Sort(cand)
	lo := cand[k-1]
	cand = cand[k-1:]
	for i, n := range cn {
		if ce[i] < lo {
			continue
		}
		for _, r := range s.reservedSpans(n) {
			if r.to > lo {
				cand = append(cand, r.to)
			}
		}
	}
	if len(cand) > 1 {
		slices.Sort(cand)
		cand = slices.Compact(cand)
	}
	pr.cand = cand
	for _, t := range cand {
		if t >= windowEnd {
			break
		}
		pick := pr.pick[:0]
		for i, n := range cn {
			if cf[i] <= t && ce[i] <= t && s.clearAt(n, t, roundUp(t+dur, res)) {
				pick = append(pick, n)
				if len(pick) == k {
					pr.pick = pick
					return t, pick
				}
			}
		}
		pr.pick = pick
	}
	return -1, nil
}

// buildNodeEnds lists, once a pass, what every running job frees on each
// of its nodes at its planned end (s.byEnd's, an overdue one just after
// now), in ascending end.
func (s *Sim) buildNodeEnds() {
	pr := &s.prof
	if pr.endsBuilt {
		return
	}
	pr.endsBuilt = true
	st := s.st
	if len(pr.nodeEnds) < len(st.nodeNames) {
		pr.nodeEnds = make([][]nodeEnd, len(st.nodeNames))
	}
	for n := range pr.nodeEnds {
		pr.nodeEnds[n] = pr.nodeEnds[n][:0]
	}
	for _, q := range s.byEnd {
		s.addNodeEnds(q.j, max(q.end, s.now+1))
	}
}

// addNodeEnds records that running job r frees its share of each of its
// nodes at end (all of a node for a whole-node job), keeping each node's
// list in ascending end.
func (s *Sim) addNodeEnds(r int32, end int64) {
	st, pr := s.st, &s.prof
	sp, d := s.spec(r), &s.dyns[r]
	excl := st.partExcl[sp.part]
	for _, n := range s.allocPool[d.allocOff : d.allocOff+sp.nodes] {
		e := nodeEnd{t: end, g: sp.gpn, c: sp.cpn}
		if excl {
			e.g, e.c = st.nodeGPUs[n], st.nodeCPUs[n]
		}
		ends := pr.nodeEnds[n]
		i := len(ends)
		for i > 0 && ends[i-1].t > end {
			i--
		}
		pr.nodeEnds[n] = slices.Insert(ends, i, e)
	}
}

// noteStart keeps this pass's node ends current after job j started in it.
func (s *Sim) noteStart(j int32, res int64) {
	if s.prof.endsBuilt {
		s.addNodeEnds(j, roundUp(s.now+s.spec(j).limit, res))
	}
}

// nodeRoom is the earliest time node n has gpn GPUs and cpn CPUs free,
// counting its running jobs' planned ends: now if it has them now, -1 if
// it never will.
func (s *Sim) nodeRoom(n, gpn, cpn int32) int64 {
	g, c := s.nodeFreeG[n], s.nodeFreeC[n]
	if g >= gpn && c >= cpn {
		return s.now
	}
	for _, e := range s.prof.nodeEnds[n] {
		g, c = g+e.g, c+e.c
		if g >= gpn && c >= cpn {
			return e.t
		}
	}
	return -1
}

// nodeClear is the earliest start t ≥ from at which node n is clear of
// this pass's reservations over [t, roundUp(t+dur, res)).
func (s *Sim) nodeClear(n int32, from, dur, res int64) int64 {
	t := from
	for moved := true; moved; {
		moved = false
		end := roundUp(t+dur, res)
		for _, r := range s.reservedSpans(n) {
			if r.from < end && r.to > t {
				t, moved = r.to, true
				end = roundUp(t+dur, res)
			}
		}
	}
	return t
}

// clearAt reports whether node n is clear of this pass's reservations
// over [from, to).
func (s *Sim) clearAt(n int32, from, to int64) bool {
	for _, r := range s.reservedSpans(n) {
		if r.from < to && r.to > from {
			return false
		}
	}
	return true
}

// reservedSpans returns this pass's reservations holding node n: those of
// shared-partition plans and those of node lists (scratch for the latter
// case, valid until the next call).
func (s *Sim) reservedSpans(n int32) []span {
	pr := &s.prof
	var own []span
	if pr.takenAny && int(n) < len(pr.taken) {
		own = pr.taken[n]
	}
	if len(pr.pins) == 0 {
		return own
	}
	out := append(pr.spanScratch[:0], own...)
	for _, r := range pr.pins {
		if r.nodes[n] {
			out = append(out, span{from: r.from, to: r.to})
		}
	}
	pr.spanScratch = out
	return out
}

// reserveElsewhere takes n nodes and g GPUs over [from, to) from the
// count profiles of the exclusive partitions sharing nodes with shared
// partition part: those built in this pass now, the others when built
// (unless the job started: a profile built later sees it running).
func (s *Sim) reserveElsewhere(part int16, from, to int64, n, g int32, started bool) {
	pr := &s.prof
	later := false
	for _, q := range s.st.partOverlap[part] {
		if q == part || !s.st.partExcl[q] {
			continue
		}
		if int(q) < len(pr.parts) && pr.parts[q].built {
			pr.parts[q].take(from, to, n, g)
		} else {
			later = true
		}
	}
	if later && !started {
		pr.resv = append(pr.resv, resv{from: from, to: to, part: part, n: n, g: g})
	}
}
