package sim

import (
	"math"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/traces"
)

// Hold reasons found in a recorded trace.
const (
	HoldNone       = ""           // no sign of a hold
	HoldIdle       = "idle-nodes" // enough nodes stood idle for IdleHold while it waited
	HoldDependency = "dependency" // same-user same-second burst, started as a sibling ended
	HoldWarmUp     = "warm-up"    // submitted before the replay reached steady state
)

// HoldOptions tune hold detection.
type HoldOptions struct {
	Nodes    int           // usable nodes (idle = Nodes − recorded busy); capped at the most ever recorded busy at once
	IdleHold time.Duration // an idle stretch this long while waiting marks a hold (default 1 h)
	WarmUp   time.Duration // jobs submitted before the first recorded start + WarmUp are excluded (default 48 h)
}

// Holds classifies each recorded job and estimates when it became eligible:
//   - dependency: the job shares its user and submit second with others
//     and started within 2 minutes after one of them ended (a chain
//     submitted at once); eligible = that sibling's end.
//   - idle-nodes: during its recorded wait, at least as many nodes as it
//     asked for stood idle (per the recorded start/end timeline) for
//     IdleHold or longer — no schedule explains that wait, so it was held
//     (dependency on an older job, user hold, begin time, limits);
//     eligible = the end of the last such idle stretch.
//   - warm-up: submitted before the first recorded start + WarmUp.
//
// Jobs with any reason are excluded from fidelity figures; the replay
// submits them at their estimated eligible time so they load the cluster
// when they really ran.
func Holds(jobs []traces.Job, o HoldOptions) (reason []string, eligible []time.Time) {
	if o.IdleHold <= 0 {
		o.IdleHold = time.Hour
	}
	if o.WarmUp <= 0 {
		o.WarmUp = 48 * time.Hour
	}
	reason = make([]string, len(jobs))
	eligible = make([]time.Time, len(jobs))
	// recorded busy-node step function
	type ev struct {
		t int64
		d int
	}
	var evs []ev
	first := int64(math.MaxInt64)
	for i := range jobs {
		j := &jobs[i]
		if j.Start.IsZero() || j.End.IsZero() {
			continue
		}
		evs = append(evs, ev{j.Start.Unix(), j.Nodes}, ev{j.End.Unix(), -j.Nodes})
		first = min(first, j.Start.Unix())
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.d - b.d
	})
	var ts []int64
	var busy []int
	b := 0
	for _, e := range evs {
		b += e.d
		if n := len(ts); n > 0 && ts[n-1] == e.t {
			busy[n-1] = b
			continue
		}
		ts = append(ts, e.t)
		busy = append(busy, b)
	}
	maxBusy := 0
	for _, x := range busy {
		maxBusy = max(maxBusy, x)
	}
	if o.Nodes <= 0 || o.Nodes > maxBusy {
		o.Nodes = maxBusy // nodes never seen busy together were down or reserved
	}
	idleHold := int64(o.IdleHold / time.Second)
	// dependency bursts
	type key struct {
		user string
		sub  int64
	}
	groups := map[key][]int{}
	for i := range jobs {
		k := key{jobs[i].User, jobs[i].Submit.Unix()}
		groups[k] = append(groups[k], i)
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Start.IsZero() || j.Submit.IsZero() {
			continue
		}
		sub, start := j.Submit.Unix(), j.Start.Unix()
		if sub < first+int64(o.WarmUp/time.Second) {
			reason[i] = HoldWarmUp
			continue
		}
		if g := groups[key{j.User, sub}]; len(g) > 1 {
			for _, k := range g {
				e := jobs[k].End
				if k != i && !e.IsZero() && start >= e.Unix() && start-e.Unix() <= 120 {
					reason[i] = HoldDependency
					eligible[i] = e
					break
				}
			}
			if reason[i] != "" {
				continue
			}
		}
		// idle stretches in [sub, start)
		k, _ := slices.BinarySearch(ts, sub+1)
		k-- // step covering sub
		runFrom := int64(-1)
		lastEnd := int64(-1)
		for ; k < len(ts); k++ {
			from := sub
			if k >= 0 {
				from = max(ts[k], sub)
			}
			if from >= start {
				break
			}
			to := start
			if k+1 < len(ts) {
				to = min(ts[k+1], start)
			}
			bz := 0
			if k >= 0 {
				bz = busy[k]
			}
			if o.Nodes-bz >= j.Nodes {
				if runFrom < 0 {
					runFrom = from
				}
				if to-runFrom >= idleHold {
					lastEnd = to
				}
			} else {
				runFrom = -1
			}
		}
		if lastEnd > 0 {
			reason[i] = HoldIdle
			eligible[i] = time.Unix(lastEnd, 0)
		}
	}
	return reason, eligible
}

// Stats are fidelity figures for one group of jobs (waits in seconds).
type Stats struct {
	Group        string  `json:"group"`             // "all", "1 node", "2-4 nodes", "5-8 nodes", ">8 nodes", ">=5 nodes"
	Jobs         int     `json:"jobs"`              // jobs compared
	MedianAbsErr float64 `json:"median_abs_err_s"`  // median |simulated − recorded wait|
	P90AbsErr    float64 `json:"p90_abs_err_s"`     // 90th percentile of the same
	Pearson      float64 `json:"pearson"`           // correlation of simulated and recorded waits
	Spearman     float64 `json:"spearman"`          // rank correlation of the same (ties share their mean rank)
	KS           float64 `json:"ks"`                // Kolmogorov–Smirnov distance of the two wait distributions
	SimMedian    float64 `json:"sim_median_wait_s"` // median simulated wait
	RecMedian    float64 `json:"rec_median_wait_s"` // median recorded wait
	SimP90       float64 `json:"sim_p90_wait_s"`    // p90 simulated wait
	RecP90       float64 `json:"rec_p90_wait_s"`    // p90 recorded wait
}

// GroupLarge names the pooled group of jobs of 5 nodes or more.
const GroupLarge = ">=5 nodes"

// Compare computes Stats over paired waits, overall, by job size (1, 2–4,
// 5–8, > 8 nodes) and for the jobs of 5 nodes or more together.
func Compare(sim, rec []float64, nodes []int) []Stats {
	groups := []struct {
		name   string
		lo, hi int
	}{{"all", 0, math.MaxInt}, {"1 node", 1, 1}, {"2-4 nodes", 2, 4}, {"5-8 nodes", 5, 8}, {">8 nodes", 9, math.MaxInt}, {GroupLarge, 5, math.MaxInt}}
	var out []Stats
	for _, g := range groups {
		var a, b []float64
		for i := range sim {
			if nodes[i] >= g.lo && nodes[i] <= g.hi {
				a = append(a, sim[i])
				b = append(b, rec[i])
			}
		}
		out = append(out, stats(g.name, a, b))
	}
	return out
}

func stats(name string, a, b []float64) Stats {
	s := Stats{Group: name, Jobs: len(a)}
	if len(a) == 0 {
		return s
	}
	errs := make([]float64, len(a))
	for i := range a {
		errs[i] = math.Abs(a[i] - b[i])
	}
	slices.Sort(errs)
	s.MedianAbsErr = quantile(errs, 0.5)
	s.P90AbsErr = quantile(errs, 0.9)
	s.Pearson = pearson(a, b)
	s.Spearman = pearson(ranks(a), ranks(b))
	sa, sb := slices.Clone(a), slices.Clone(b)
	slices.Sort(sa)
	slices.Sort(sb)
	s.KS = ks(sa, sb)
	s.SimMedian, s.RecMedian = quantile(sa, 0.5), quantile(sb, 0.5)
	s.SimP90, s.RecP90 = quantile(sa, 0.9), quantile(sb, 0.9)
	return s
}

// quantile of sorted xs by linear interpolation.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	p := q * float64(len(xs)-1)
	i := int(p)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (p-float64(i))*(xs[i+1]-xs[i])
}

func pearson(a, b []float64) float64 {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= n
	mb /= n
	var cov, va, vb float64
	for i := range a {
		cov += (a[i] - ma) * (b[i] - mb)
		va += (a[i] - ma) * (a[i] - ma)
		vb += (b[i] - mb) * (b[i] - mb)
	}
	if va == 0 || vb == 0 {
		return 0
	}
	return cov / math.Sqrt(va*vb)
}

// ranks returns each value's rank (1-based) in xs; tied values share the
// mean of their ranks.
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// KS is the two-sample Kolmogorov–Smirnov distance of a and b (any order,
// any sizes; neither is changed): the largest difference of their
// empirical distribution functions.
func KS(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return ks(a, b)
}

// ks is the two-sample Kolmogorov–Smirnov distance of sorted samples.
func ks(a, b []float64) float64 {
	i, j := 0, 0
	d := 0.0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] <= x {
			i++
		}
		for j < len(b) && b[j] <= x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}

// Report is the outcome of a fidelity replay.
type Report struct {
	Jobs     int            `json:"jobs"`     // jobs replayed
	Skipped  int            `json:"skipped"`  // trace rows without start or end
	Excluded map[string]int `json:"excluded"` // compared-out jobs by hold reason
	Stats    []Stats        `json:"stats"`    // overall and by size
	SimDays  float64        `json:"sim_days"` // simulated span in days
}

// Fidelity replays recorded jobs on cfg and compares simulated with recorded
// waits for the jobs without recorded holds (see Holds).
func Fidelity(jobs []traces.Job, cfg Config, progress func(now time.Time)) (*Report, []Result, error) {
	reason, elig := Holds(jobs, HoldOptions{Nodes: len(cfg.Nodes)})
	specs, index, skipped := FromTraces(jobs, elig)
	s, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Load(specs); err != nil {
		return nil, nil, err
	}
	s.OnProgress(progress)
	s.Run(time.Time{})
	res := s.Results()
	byID := make(map[string]int, len(res))
	for i := range res {
		byID[res[i].ID] = i
	}
	rep := &Report{Jobs: len(specs), Skipped: skipped, Excluded: map[string]int{}}
	if len(specs) > 0 {
		first := specs[0].Submit
		for _, sp := range specs {
			if sp.Submit.Before(first) {
				first = sp.Submit
			}
		}
		rep.SimDays = s.Now().Sub(first).Hours() / 24
	}
	var sw, rw []float64
	var nodes []int
	for k, i := range index {
		if reason[i] != HoldNone {
			rep.Excluded[reason[i]]++
			continue
		}
		r := res[byID[specs[k].ID]]
		if r.Start.IsZero() {
			rep.Excluded["never-started"]++
			continue
		}
		sw = append(sw, r.Start.Sub(jobs[i].Submit).Seconds())
		rw = append(rw, jobs[i].Wait().Seconds())
		nodes = append(nodes, jobs[i].Nodes)
	}
	rep.Stats = Compare(sw, rw, nodes)
	return rep, res, nil
}
