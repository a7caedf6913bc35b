package models

import (
	"slices"
	"sort"
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

// planWaits estimates, from the snapshot alone and with every job running
// to its time limit, how long a job needing the successor's resources for
// its limit would wait if submitted now: first when it would be the
// highest-priority pending job (only running jobs are in its way), last
// when it would be the lowest (every pending job, in priority order, is
// first placed at its earliest start: conservative backfill). Capacity is
// aggregated over the partition's schedulable nodes, in GPUs (or in nodes
// when the partition has no GPUs), which is exact for whole-node clusters
// and ignores fragmentation otherwise. Both are in seconds, capped at
// planHorizon; zero without a snapshot or a successor shape.
func planWaits(snap *provisioner.Snapshot, now time.Time, partition string, succNodes, succGPUs int, succLimit time.Duration) (first, last float64) {
	var gpuCap, nodeCap int64
	// A node that lists no partitions (Kubernetes) belongs to every partition.
	inPart := func(parts []string) bool {
		return partition == "" || len(parts) == 0 || slices.Contains(parts, partition)
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.State == provisioner.NodeUp && inPart(n.Partitions) {
			gpuCap += int64(n.GPUs)
			nodeCap++
		}
	}
	useGPUs := gpuCap > 0
	capacity := nodeCap
	if useGPUs {
		capacity = gpuCap
	}
	need := func(nodes, gpus int) int64 {
		if useGPUs {
			return int64(gpus)
		}
		return int64(nodes)
	}
	sn := need(succNodes, succGPUs)
	if capacity == 0 || sn <= 0 || succLimit <= 0 {
		return 0, 0
	}
	if sn > capacity {
		return planHorizon, planHorizon
	}
	t0 := now.Unix()
	used := int64(0)
	releases := make([][2]int64, 0, len(snap.Jobs))
	pend := make([]*provisioner.Job, 0, len(snap.Jobs))
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if partition != "" && j.Partition != partition {
			continue
		}
		switch j.State {
		case provisioner.StateRunning:
			r := need(j.Nodes, j.GPUs)
			if r <= 0 {
				continue
			}
			used += r
			end := j.Start.Add(j.TimeLimit).Unix()
			if end <= t0 {
				end = t0 + 60 // over its limit: about to be killed
			}
			releases = append(releases, [2]int64{end, r})
		case provisioner.StatePending:
			if j.Reason == "Dependency" || need(j.Nodes, j.GPUs) <= 0 {
				continue
			}
			pend = append(pend, j)
		}
	}
	free := max(capacity-used, 0)
	dur := int64(succLimit / time.Second)
	p := newProfile(t0, free, releases, min(len(pend), planMaxPending))
	if s := p.earliest(sn, dur); s >= 0 {
		first = float64(s - t0)
	} else {
		first = planHorizon
	}
	sort.SliceStable(pend, func(a, b int) bool {
		if pend[a].Priority != pend[b].Priority {
			return pend[a].Priority > pend[b].Priority
		}
		if !pend[a].Submit.Equal(pend[b].Submit) {
			return pend[a].Submit.Before(pend[b].Submit)
		}
		return pend[a].ID < pend[b].ID
	})
	if len(pend) > planMaxPending {
		pend = pend[:planMaxPending]
	}
	for _, j := range pend {
		r := min(need(j.Nodes, j.GPUs), capacity)
		d := int64(j.TimeLimit / time.Second)
		if d <= 0 {
			d = 3600
		}
		if s := p.earliest(r, d); s >= 0 {
			p.reserve(s, d, r)
		}
	}
	if s := p.earliest(sn, dur); s >= 0 {
		last = float64(s - t0)
	} else {
		last = planHorizon
	}
	return min(first, planHorizon), min(last, planHorizon)
}
