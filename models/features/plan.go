package features

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// planHorizon caps planned waits: a job that never fits (it asks for more
// than the partition holds) is planned this far away.
const planHorizon = 14 * 24 * 3600

// planMaxPending is how many pending jobs the planner places, in priority
// order (Slurm's bf_max_job_test plays the same role).
const planMaxPending = 200

// profile is a step function of free capacity over time: free[i] holds on
// [t[i], t[i+1]). Reservations only lower it, so the steps before lo, all
// with nothing free, can never fit a job and are skipped.
type profile struct {
	t    []int64
	free []int64
	lo   int
}

// newProfile starts with free capacity at now and releases of running
// jobs; room is the number of reservations to make room for.
func newProfile(now, free int64, releases [][2]int64, room int) *profile {
	slices.SortFunc(releases, func(a, b [2]int64) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	n := len(releases) + 2*room + 2
	p := &profile{t: make([]int64, 1, n), free: make([]int64, 1, n)}
	p.t[0], p.free[0] = now, free
	for _, r := range releases {
		at := max(r[0], now)
		last := len(p.t) - 1
		if at == p.t[last] {
			p.free[last] += r[1]
			continue
		}
		p.t = append(p.t, at)
		p.free = append(p.free, p.free[last]+r[1])
	}
	return p
}

// earliest returns the first time ≥ now at which need fits for dur.
func (p *profile) earliest(need, dur int64) int64 {
	n := len(p.t)
	for p.lo < n-1 && p.free[p.lo] <= 0 {
		p.lo++
	}
	for i := p.lo; i < n; {
		start := p.t[i]
		end := start + dur
		ok := true
		for j := i; j < n && p.t[j] < end; j++ {
			if p.free[j] < need {
				ok = false
				i = j + 1
				break
			}
		}
		if ok {
			return start
		}
	}
	return -1
}

// split makes at a breakpoint and returns its index.
func (p *profile) split(at int64) int {
	i := sort.Search(len(p.t), func(k int) bool { return p.t[k] >= at })
	if i < len(p.t) && p.t[i] == at {
		return i
	}
	// at lies inside step i−1 (at > t[0] always here).
	p.t = slices.Insert(p.t, i, at)
	p.free = slices.Insert(p.free, i, p.free[i-1])
	return i
}

// reserve subtracts need over [start, start+dur).
func (p *profile) reserve(start, dur, need int64) {
	a := p.split(start)
	b := p.split(start + dur)
	for k := a; k < b; k++ {
		p.free[k] -= need
	}
}

// planShape is the job whose wait a plan estimates.
type planShape struct {
	partition string        // its partition ("" = every node)
	account   string        // its account (for its place among pending jobs)
	nodes     int           // nodes
	gpus      int           // GPUs
	limit     time.Duration // time limit
}

// planResult holds a plan's waits for the shape, in seconds capped at
// planHorizon: first when the job would be the highest-priority pending
// job, mid behind the upper half of the pending jobs (by priority), own
// behind the pending jobs its estimated priority ranks below (ownPlace;
// first when none) and last behind every pending job; a planner not asked
// for places leaves mid 0 and own first.
type planResult struct{ first, mid, own, last float64 }

// planner estimates, from the snapshot alone, how long a job of one shape
// would wait if submitted now, at several places in the priority order
// (planResult): pending jobs ahead of it are placed at their earliest
// start in priority order (conservative backfill). Capacity is aggregated
// over the partition's schedulable nodes, in GPUs (or in nodes when the
// partition has no GPUs), which is exact for whole-node clusters and
// ignores fragmentation otherwise; all waits are zero without a snapshot
// or a shape. It holds what every plan of the shape shares — capacity,
// running jobs, pending jobs in priority order (at most planMaxPending)
// and the shape's own place among them (only when asked for: places) — so
// that plans with different runtimes (planner.plan) pay for them once.
type planner struct {
	t0       int64
	useGPUs  bool
	capacity int64
	sn, dur  int64 // the shape's need and duration (seconds)
	running  []*provisioner.Job
	pend     []*provisioner.Job
	places   bool // compute mid and own (else they are 0 and first)
	own      int
	result   *planResult // fixed answer (no capacity or shape, or never fits)
}

func (pl *planner) need(nodes, gpus int) int64 {
	if pl.useGPUs {
		return int64(gpus)
	}
	return int64(nodes)
}

func newPlanner(snap *provisioner.Snapshot, now time.Time, s planShape, places bool) *planner {
	var gpuCap, nodeCap int64
	// A node that lists no partitions (Kubernetes) belongs to every partition.
	inPart := func(parts []string) bool {
		return s.partition == "" || len(parts) == 0 || slices.Contains(parts, s.partition)
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.State == provisioner.NodeUp && inPart(n.Partitions) {
			gpuCap += int64(n.GPUs)
			nodeCap++
		}
	}
	pl := &planner{t0: now.Unix(), useGPUs: gpuCap > 0, capacity: nodeCap, dur: int64(s.limit / time.Second)}
	if pl.useGPUs {
		pl.capacity = gpuCap
	}
	pl.sn = pl.need(s.nodes, s.gpus)
	if pl.capacity == 0 || pl.sn <= 0 || s.limit <= 0 {
		pl.result = &planResult{}
		return pl
	}
	if pl.sn > pl.capacity {
		pl.result = &planResult{planHorizon, planHorizon, planHorizon, planHorizon}
		return pl
	}
	pl.running = make([]*provisioner.Job, 0, len(snap.Jobs))
	pl.pend = make([]*provisioner.Job, 0, len(snap.Jobs))
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if s.partition != "" && j.Partition != s.partition {
			continue
		}
		switch j.State {
		case provisioner.StateRunning:
			if pl.need(j.Nodes, j.GPUs) > 0 {
				pl.running = append(pl.running, j)
			}
		case provisioner.StatePending:
			if j.Reason != provisioner.PendingDependency && pl.need(j.Nodes, j.GPUs) > 0 {
				pl.pend = append(pl.pend, j)
			}
		}
	}
	slices.SortStableFunc(pl.pend, func(a, b *provisioner.Job) int {
		switch {
		case a.Priority != b.Priority:
			if a.Priority > b.Priority {
				return -1
			}
			return 1
		case !a.Submit.Equal(b.Submit):
			return a.Submit.Compare(b.Submit)
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(pl.pend) > planMaxPending {
		pl.pend = pl.pend[:planMaxPending]
	}
	if places {
		pl.places = true
		pl.own = ownPlace(pl.pend, now, s.account)
	}
	return pl
}

// plan runs one conservative-backfill plan with jobs running for frac of
// their time limit (nil: to the limit, as Slurm plans; a running job past
// that share ends a minute from now); the shape itself needs its whole
// limit.
func (pl *planner) plan(frac func(*provisioner.Job) float64) planResult {
	if pl.result != nil {
		return *pl.result
	}
	scaled := func(j *provisioner.Job) int64 {
		if frac == nil {
			return max(int64(j.TimeLimit/time.Second), 60)
		}
		return max(int64(frac(j)*j.TimeLimit.Seconds()), 60)
	}
	t0 := pl.t0
	used := int64(0)
	releases := make([][2]int64, 0, len(pl.running))
	for _, j := range pl.running {
		r := pl.need(j.Nodes, j.GPUs)
		used += r
		end := j.Start.Unix() + scaled(j)
		if end <= t0 {
			end = t0 + 60 // over its (expected) limit: about to end
		}
		releases = append(releases, [2]int64{end, r})
	}
	free := max(pl.capacity-used, 0)
	p := newProfile(t0, free, releases, len(pl.pend))
	at := func() float64 {
		if st := p.earliest(pl.sn, pl.dur); st >= 0 {
			return float64(min(st-t0, planHorizon))
		}
		return planHorizon
	}
	var r planResult
	r.first = at()
	r.own = r.first
	mid := len(pl.pend) / 2
	if !pl.places {
		mid = -1
	}
	for k, j := range pl.pend {
		if k == mid {
			r.mid = at()
		}
		rn := min(pl.need(j.Nodes, j.GPUs), pl.capacity)
		d := scaled(j)
		if j.TimeLimit <= 0 {
			d = 3600
		}
		if st := p.earliest(rn, d); st >= 0 {
			p.reserve(st, d, rn)
		}
		if k+1 == pl.own {
			r.own = at()
		}
	}
	r.last = at()
	if len(pl.pend) == 0 && pl.places {
		r.mid = r.last
	}
	return r
}

// ownPlace estimates how many of pend (sorted by priority, highest first)
// a new job of account would rank behind. Priority grows with age at a
// rate fitted within accounts (Slurm's age factor: linear up to
// PriorityMaxAge); a pending job's priority minus its age term is what a
// new job of its account would get. The new job's estimate is the mean of
// those over its account's pending jobs, or their median over all pending
// jobs when its account has none.
func ownPlace(pend []*provisioner.Job, now time.Time, account string) int {
	if len(pend) == 0 {
		return 0
	}
	type acc struct{ n, sx, sy, sxx, sxy float64 }
	groups := map[string]*acc{}
	age := func(j *provisioner.Job) float64 {
		t := j.Submit
		if !j.Eligible.IsZero() {
			t = j.Eligible
		}
		return max(now.Sub(t).Hours(), 0)
	}
	for _, j := range pend {
		g := groups[j.Account]
		if g == nil {
			g = &acc{}
			groups[j.Account] = g
		}
		x, y := age(j), float64(j.Priority)
		g.n++
		g.sx += x
		g.sy += y
		g.sxx += x * x
		g.sxy += x * y
	}
	var cxx, cxy float64 // within-account (co)variances
	for _, g := range groups {
		if g.n < 2 {
			continue
		}
		cxx += g.sxx - g.sx*g.sx/g.n
		cxy += g.sxy - g.sx*g.sy/g.n
	}
	slope := 0.0
	if cxx > 0 {
		slope = max(cxy/cxx, 0)
	}
	var est float64
	if g := groups[account]; account != "" && g != nil {
		est = (g.sy - slope*g.sx) / g.n
	} else {
		base := make([]float64, len(pend))
		for k, j := range pend {
			base[k] = float64(j.Priority) - slope*age(j)
		}
		sort.Float64s(base)
		est = Percentile(base, 0.5)
	}
	n := 0
	for _, j := range pend {
		if float64(j.Priority) >= est {
			n++
		}
	}
	return n
}
