package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/traces"
)

// Calibration fits the simulator's free parameters to a site's own trace:
// the replay of the recorded jobs should wait as the recorded jobs waited.
//
// The search is coordinate descent over a grid (Space): starting from the
// base preset, each parameter in turn takes every value of its grid with
// the others fixed (those replays run in parallel) and keeps the best; the
// rounds repeat until a round changes nothing (at most Rounds). Every
// candidate replays the whole trace, so the queue each job meets is built
// by the same history; only the jobs submitted in the fit span enter the
// objective. The jobs compared are fixed for the whole search: holds are
// detected once, with HoldNodes usable nodes, not with each candidate's.
//
// The objective (lower is better), set before any scored span was looked at:
//
//	J = max over size groups of the KS distance of simulated and recorded waits
//	  + 0.25 × (1 − Spearman's ρ of per-job waits, jobs of ≥ 5 nodes)
//
// over the groups 1, 2–4, 5–8 and > 8 nodes and all jobs, each counted only
// with at least MinGroup jobs in the fit span. KS makes the wait
// distributions match in every size group (what the learned policies' load
// classes need); the rank correlation asks that the large jobs, which decide
// the heavy-load hand-offs, wait in the order they really waited. A rank
// correlation, not Pearson's, because waits span seconds to days.

// Params are the simulator parameters a calibration fits.
type Params struct {
	Nodes           int           `json:"nodes" yaml:"nodes"`                                                           // usable nodes (the base preset's first ones, or copies of its nodes)
	AgeWeight       float64       `json:"priority_weight_age" yaml:"priority_weight_age"`                               // PriorityWeightAge
	MaxAge          time.Duration `json:"priority_max_age,omitempty" yaml:"priority_max_age,omitempty"`                 // PriorityMaxAge (0: the base's)
	SizeWeight      float64       `json:"priority_weight_job_size" yaml:"priority_weight_job_size"`                     // PriorityWeightJobSize
	FairshareWeight float64       `json:"priority_weight_fairshare" yaml:"priority_weight_fairshare"`                   // PriorityWeightFairshare
	RecordedWeight  float64       `json:"priority_weight_recorded,omitempty" yaml:"priority_weight_recorded,omitempty"` // PriorityWeightRecorded (traces that record priorities)
	SchedLatency    time.Duration `json:"sched_latency" yaml:"sched_latency"`                                           // event-triggered main pass latency bound
	BFInterval      time.Duration `json:"bf_interval" yaml:"bf_interval"`                                               // bf_interval
	// EmpiricalLatency draws the latency from the base's LatencyTable (the
	// one fitLatency measured) instead of uniformly up to SchedLatency.
	EmpiricalLatency bool `json:"empirical_latency,omitempty" yaml:"empirical_latency,omitempty"`
}

// ParamsOf reads a configuration's calibrated parameters.
func ParamsOf(c Config) Params {
	return Params{Nodes: len(c.Nodes), AgeWeight: c.PriorityWeightAge, MaxAge: c.PriorityMaxAge, SizeWeight: c.PriorityWeightJobSize,
		FairshareWeight: c.PriorityWeightFairshare, RecordedWeight: c.PriorityWeightRecorded, SchedLatency: c.SchedLatency, BFInterval: c.BFInterval,
		EmpiricalLatency: len(c.LatencyTable) > 0}
}

// Apply returns base with p's values. The node list is base's first p.Nodes
// nodes, extended with copies of its nodes in order (named cal0001, …), so
// a mixed cluster grows in its own proportions.
func (p Params) Apply(base Config) (Config, error) {
	if len(base.Nodes) == 0 {
		return Config{}, fmt.Errorf("%w: calibration needs a preset with nodes", ErrConfig)
	}
	if p.Nodes < 1 || p.AgeWeight < 0 || p.MaxAge < 0 || p.SizeWeight < 0 || p.FairshareWeight < 0 || p.RecordedWeight < 0 || p.SchedLatency < 0 || p.BFInterval < time.Second {
		return Config{}, fmt.Errorf("%w: calibration parameters out of range: %+v", ErrConfig, p)
	}
	if p.EmpiricalLatency && len(base.LatencyTable) == 0 {
		return Config{}, fmt.Errorf("%w: an empirical latency needs the preset's latency table (latency_table in a preset file)", ErrConfig)
	}
	c := base
	if !p.EmpiricalLatency {
		c.LatencyTable = nil
	}
	c.Nodes = slices.Clone(base.Nodes[:min(p.Nodes, len(base.Nodes))])
	for i := len(c.Nodes); i < p.Nodes; i++ {
		n := base.Nodes[(i-len(base.Nodes))%len(base.Nodes)]
		n.Name = fmt.Sprintf("cal%04d", i+1)
		c.Nodes = append(c.Nodes, n)
	}
	c.PriorityWeightAge, c.PriorityWeightJobSize, c.PriorityWeightFairshare = p.AgeWeight, p.SizeWeight, p.FairshareWeight
	c.PriorityWeightRecorded = p.RecordedWeight
	if p.MaxAge > 0 {
		c.PriorityMaxAge = p.MaxAge
	}
	c.SchedLatency, c.BFInterval = p.SchedLatency, p.BFInterval
	return c, nil
}

// Space is the grid each parameter is searched over; an empty list keeps
// the base preset's value.
type Space struct {
	Nodes           []int
	AgeWeight       []float64
	MaxAge          []time.Duration // PriorityMaxAge
	SizeWeight      []float64
	FairshareWeight []float64
	RecordedWeight  []float64 // searched only when the trace records priorities
	SchedLatency    []time.Duration
	BFInterval      []time.Duration
	// EmpiricalLatency: whether to try the latency fitLatency measures on
	// the fit span ({false, true}); searched only when it can be measured.
	EmpiricalLatency []bool
}

// DefaultSpace is the grid `mirage sim calibrate` searches: usable nodes
// from 70% to 110% of the preset's (every count, or 41 steps on large
// clusters), weights 0–5000, PriorityMaxAge 1–14 days, latencies 0–60 s
// or the empirical one, bf_interval 30–120 s.
func DefaultSpace(base Config) Space {
	n := len(base.Nodes)
	var nodes []int
	lo, hi := max(1, int(math.Round(0.7*float64(n)))), max(1, int(math.Round(1.1*float64(n))))
	step := max(1, (hi-lo)/40)
	for k := lo; k <= hi; k += step {
		nodes = append(nodes, k)
	}
	if !slices.Contains(nodes, n) {
		nodes = append(nodes, n)
		slices.Sort(nodes)
	}
	w := []float64{0, 100, 500, 1000, 2000, 5000}
	day := 24 * time.Hour
	return Space{Nodes: nodes, AgeWeight: w, MaxAge: []time.Duration{day, 2 * day, 7 * day, 14 * day}, SizeWeight: w, FairshareWeight: w, RecordedWeight: w,
		SchedLatency:     []time.Duration{0, time.Second, 10 * time.Second, 60 * time.Second},
		BFInterval:       []time.Duration{30 * time.Second, 60 * time.Second, 120 * time.Second},
		EmpiricalLatency: []bool{false, true}}
}

// Span is a window of submissions.
type Span struct {
	From, Until time.Time
}

func (s Span) holds(t time.Time) bool {
	return (s.From.IsZero() || !t.Before(s.From)) && (s.Until.IsZero() || t.Before(s.Until))
}

// CalibrateSpec configures Calibrate.
type CalibrateSpec struct {
	Jobs      []traces.Job
	Base      Config // the preset searched from (its first node is the node shape)
	Fit       Span   // the objective's jobs
	Score     Span   // reported only, never searched on (zero: not scored); it must begin at or after Fit.Until
	HoldNodes int    // usable nodes hold detection assumes (0: the base preset's)
	Space     Space
	Rounds    int // coordinate-descent rounds (default 3)
	Replicas  int // replays per candidate, with seeds Base.Seed, Base.Seed+1, …, their waits pooled (default 3)
	MinGroup  int // jobs a size group needs in the fit span to count (default 30)
	Workers   int // parallel replays (default GOMAXPROCS)
	// Progress is told after each replay (on the calling goroutine).
	Progress func(done int, best float64)
}

// Evaluation is one candidate's replay.
type Evaluation struct {
	Params    Params  `json:"params"`
	Objective float64 `json:"objective"` // J on the fit span
	Fit       []Stats `json:"fit"`       // fidelity on the fit span (jobs counted once per replica)
	Score     []Stats `json:"score"`     // fidelity on the scored span (the same)
}

// Calibration is the outcome of Calibrate.
type Calibration struct {
	Base             Evaluation     `json:"base"` // the base preset, as it is
	Best             Evaluation     `json:"best"`
	Replays          int            `json:"replays"`  // candidates replayed
	Compared         int            `json:"compared"` // jobs in the fit span compared
	Scored           int            `json:"scored"`   // jobs in the scored span compared
	Excluded         map[string]int `json:"excluded"` // jobs left out, by hold reason (whole trace)
	HoldNodes        int            `json:"hold_nodes"`
	Replicas         int            `json:"replicas"`          // replays per candidate (Stats count each job once per replica)
	RecordedPriority bool           `json:"recorded_priority"` // the trace records priorities: their weight was searched
	// LatencyTable is the empirical latency the search could use (the
	// base's, or fitLatency's on the fit span; empty: none measured) and
	// LatencySamples the jobs fitLatency measured it on.
	LatencyTable   []time.Duration `json:"latency_table,omitempty"`
	LatencySamples int             `json:"latency_samples,omitempty"`
	Fit, Score     Span            `json:"-"`
}

// ErrCalibrate: the trace cannot be calibrated on (too few jobs in a span).
var ErrCalibrate = errors.New("calibration")

// Calibrate searches s.Space for the parameters that minimise the
// objective on s.Fit (see the comment at the top of this file). It is
// deterministic: replays are, and ties keep the earlier value.
func Calibrate(ctx context.Context, s CalibrateSpec) (*Calibration, error) {
	if s.Rounds <= 0 {
		s.Rounds = 3
	}
	if s.MinGroup <= 0 {
		s.MinGroup = 30
	}
	if s.Workers <= 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	if s.Replicas <= 0 {
		s.Replicas = 3
	}
	if s.HoldNodes <= 0 {
		s.HoldNodes = len(s.Base.Nodes)
	}
	if s.Score != (Span{}) && (s.Fit.Until.IsZero() || s.Score.From.Before(s.Fit.Until)) {
		return nil, fmt.Errorf("%w: the scored span %s must begin where the fit span %s ends, or later: parameters are scored only on jobs the search never fitted on", ErrCalibrate, spanString(s.Score), spanString(s.Fit))
	}
	reason, elig := Holds(s.Jobs, HoldOptions{Nodes: s.HoldNodes})
	specs, index, _ := FromTraces(s.Jobs, elig)
	r := &replayer{spec: s, specs: specs}
	cal := &Calibration{Excluded: map[string]int{}, HoldNodes: s.HoldNodes, Replicas: s.Replicas, Fit: s.Fit, Score: s.Score}
	for k, i := range index {
		j := &s.Jobs[i]
		if reason[i] != HoldNone {
			cal.Excluded[reason[i]]++
			continue
		}
		c := compared{spec: k, nodes: j.Nodes, submit: j.Submit, rec: j.Wait().Seconds()}
		switch {
		case s.Fit.holds(j.Submit):
			r.fit = append(r.fit, c)
		case s.Score != (Span{}) && s.Score.holds(j.Submit):
			r.score = append(r.score, c)
		}
	}
	// The recorded priority is searched only when the trace has one.
	recorded := slices.ContainsFunc(specs, func(sp JobSpec) bool { return sp.RecordedPriority > 0 })
	if !recorded {
		s.Space.RecordedWeight = nil
	}
	cal.RecordedPriority = recorded
	// A cluster smaller than the largest job would refuse it: no candidate goes below.
	largest := 1
	for _, sp := range specs {
		largest = max(largest, sp.Nodes)
	}
	s.Space.Nodes = slices.DeleteFunc(slices.Clone(s.Space.Nodes), func(n int) bool { return n < largest })
	r.spec.Space = s.Space
	cal.Compared, cal.Scored = len(r.fit), len(r.score)
	if cal.Compared < s.MinGroup {
		return nil, fmt.Errorf("%w: %d jobs to compare in the fit span %s, want at least %d", ErrCalibrate, cal.Compared, spanString(s.Fit), s.MinGroup)
	}
	base := ParamsOf(s.Base)
	if len(s.Space.EmpiricalLatency) > 0 && !base.EmpiricalLatency {
		tab, n, err := r.fitLatency(s.Base)
		if err != nil {
			return nil, err
		}
		cal.LatencySamples = n
		if tab == nil {
			r.spec.Space.EmpiricalLatency = nil
		} else {
			r.spec.Base.LatencyTable = tab
		}
	}
	cal.LatencyTable = r.spec.Base.LatencyTable
	s.Space = r.spec.Space
	evs, err := r.run(ctx, []Params{base})
	if err != nil {
		return nil, err
	}
	cal.Base, cal.Best = evs[0], evs[0]
	for round := 0; round < s.Rounds; round++ {
		changed := false
		for _, axis := range axes(s.Space) {
			cands := axis(cal.Best.Params)
			if len(cands) == 0 {
				continue
			}
			evs, err := r.run(ctx, cands)
			if err != nil {
				return nil, err
			}
			for _, e := range evs {
				if e.Objective < cal.Best.Objective-1e-12 {
					cal.Best, changed = e, true
				}
			}
		}
		if !changed {
			break
		}
	}
	cal.Replays = r.replays
	return cal, nil
}

// axes are the coordinate moves: each gives p with one parameter set to
// every other value of its grid.
func axes(sp Space) []func(p Params) []Params {
	move := func(n int, set func(p *Params, i int), same func(p Params, i int) bool) func(Params) []Params {
		return func(p Params) []Params {
			var out []Params
			for i := 0; i < n; i++ {
				if !same(p, i) {
					q := p
					set(&q, i)
					out = append(out, q)
				}
			}
			return out
		}
	}
	return []func(Params) []Params{
		move(len(sp.Nodes), func(p *Params, i int) { p.Nodes = sp.Nodes[i] }, func(p Params, i int) bool { return p.Nodes == sp.Nodes[i] }),
		move(len(sp.AgeWeight), func(p *Params, i int) { p.AgeWeight = sp.AgeWeight[i] }, func(p Params, i int) bool { return p.AgeWeight == sp.AgeWeight[i] }),
		move(len(sp.MaxAge), func(p *Params, i int) { p.MaxAge = sp.MaxAge[i] }, func(p Params, i int) bool { return p.MaxAge == sp.MaxAge[i] }),
		move(len(sp.SizeWeight), func(p *Params, i int) { p.SizeWeight = sp.SizeWeight[i] }, func(p Params, i int) bool { return p.SizeWeight == sp.SizeWeight[i] }),
		move(len(sp.FairshareWeight), func(p *Params, i int) { p.FairshareWeight = sp.FairshareWeight[i] }, func(p Params, i int) bool { return p.FairshareWeight == sp.FairshareWeight[i] }),
		move(len(sp.RecordedWeight), func(p *Params, i int) { p.RecordedWeight = sp.RecordedWeight[i] }, func(p Params, i int) bool { return p.RecordedWeight == sp.RecordedWeight[i] }),
		move(len(sp.SchedLatency), func(p *Params, i int) { p.SchedLatency = sp.SchedLatency[i] }, func(p Params, i int) bool { return p.SchedLatency == sp.SchedLatency[i] }),
		move(len(sp.BFInterval), func(p *Params, i int) { p.BFInterval = sp.BFInterval[i] }, func(p Params, i int) bool { return p.BFInterval == sp.BFInterval[i] }),
		move(len(sp.EmpiricalLatency), func(p *Params, i int) { p.EmpiricalLatency = sp.EmpiricalLatency[i] },
			func(p Params, i int) bool { return p.EmpiricalLatency == sp.EmpiricalLatency[i] }),
	}
}

// compared is a job whose simulated wait is compared with its recorded one.
type compared struct {
	spec   int       // index into the replayed specs
	nodes  int       // recorded nodes
	submit time.Time // recorded submission
	rec    float64   // recorded wait, seconds
}

// replayer replays candidates and scores them, remembering each.
type replayer struct {
	spec       CalibrateSpec
	specs      []JobSpec
	fit, score []compared
	seen       map[Params]Evaluation
	replays    int
	best       float64
}

// run evaluates the candidates (in parallel; results in input order).
func (r *replayer) run(ctx context.Context, cands []Params) ([]Evaluation, error) {
	if r.seen == nil {
		r.seen, r.best = map[Params]Evaluation{}, math.Inf(1)
	}
	out := make([]Evaluation, len(cands))
	errs := make([]error, len(cands))
	var todo []int
	for i, p := range cands {
		if e, ok := r.seen[p]; ok {
			out[i] = e
		} else {
			todo = append(todo, i)
		}
	}
	next := make(chan int)
	done := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(r.spec.Workers, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = r.evaluate(cands[i])
				done <- i
			}
		}()
	}
	go func() {
		defer close(next)
		for _, i := range todo {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(done) }()
	for i := range done {
		if errs[i] == nil {
			r.seen[cands[i]] = out[i]
			r.replays++
			r.best = min(r.best, out[i].Objective)
			if r.spec.Progress != nil {
				r.spec.Progress(r.replays, r.best)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// evaluate replays the trace with p, once per replica seed, and scores the
// compared jobs on the replicas' waits pooled: the scheduling latency's
// draws move single waits, and one replay's objective would follow them.
func (r *replayer) evaluate(p Params) (Evaluation, error) {
	cfg, err := p.Apply(r.spec.Base)
	if err != nil {
		return Evaluation{}, err
	}
	type pooled struct {
		sw, rw []float64
		nodes  []int
	}
	var fit, score pooled
	for k := 0; k < r.spec.Replicas; k++ {
		c := cfg
		c.Seed = cfg.Seed + uint64(k)
		start, err := ReplayStarts(c, r.specs)
		if err != nil {
			return Evaluation{}, err
		}
		add := func(dst *pooled, cs []compared) {
			for _, c := range cs {
				st := start[r.specs[c.spec].ID]
				if st.IsZero() {
					continue // never started in the replay: nothing to compare
				}
				dst.sw = append(dst.sw, st.Sub(c.submit).Seconds())
				dst.rw = append(dst.rw, c.rec)
				dst.nodes = append(dst.nodes, c.nodes)
			}
		}
		add(&fit, r.fit)
		add(&score, r.score)
	}
	e := Evaluation{Params: p, Fit: Compare(fit.sw, fit.rw, fit.nodes)}
	e.Objective = Objective(e.Fit, r.spec.MinGroup*r.spec.Replicas)
	if len(r.score) > 0 {
		e.Score = Compare(score.sw, score.rw, score.nodes)
	}
	return e, nil
}

// Objective is the calibration objective J of fidelity figures (see the
// top of this file): the largest KS distance among the groups with at
// least minGroup jobs, plus 0.25 × (1 − Spearman's ρ) of the ≥ 5-node jobs
// (of both large groups together; skipped with fewer than minGroup).
func Objective(stats []Stats, minGroup int) float64 {
	worst := 0.0
	for _, g := range stats {
		if g.Jobs >= minGroup {
			worst = max(worst, g.KS)
		}
	}
	for _, g := range stats {
		if g.Group == GroupLarge && g.Jobs >= minGroup {
			worst += 0.25 * (1 - g.Spearman)
		}
	}
	return worst
}

// MaxReplays bounds the replays Calibrate makes over sp in rounds (for a
// progress bar: the search usually stops sooner).
func (sp Space) MaxReplays(rounds int) int {
	if rounds <= 0 {
		rounds = 3
	}
	return 1 + rounds*(len(sp.Nodes)+len(sp.AgeWeight)+len(sp.MaxAge)+len(sp.SizeWeight)+len(sp.FairshareWeight)+len(sp.RecordedWeight)+len(sp.SchedLatency)+len(sp.BFInterval)+len(sp.EmpiricalLatency))
}

// String renders the span as [from, until) with dates ("…": open).
func (s Span) String() string { return spanString(s) }

func spanString(s Span) string {
	f := func(t time.Time) string {
		if t.IsZero() {
			return "…"
		}
		return t.Format("2006-01-02")
	}
	return "[" + f(s.From) + ", " + f(s.Until) + ")"
}

// LatencyQuantiles is the size of the latency table fitLatency measures.
const LatencyQuantiles = 100

// fitLatency measures the scheduler's own latency on the fit span: it
// replays the trace with base and no latency at all, and takes the jobs of
// the fit span that the replay started the moment they could start (the
// cluster had room for them). What those jobs waited in the trace is what
// the real scheduler took to start a job it had room for; its
// LatencyQuantiles quantiles, in whole seconds, are the table. Fewer than
// MinGroup such jobs: no table (nil).
func (r *replayer) fitLatency(base Config) ([]time.Duration, int, error) {
	c := base
	c.SchedLatency, c.LatencyTable = 0, nil
	start, err := ReplayStarts(c, r.specs)
	if err != nil {
		return nil, 0, err
	}
	var lat []float64
	for _, cj := range r.fit {
		sp := r.specs[cj.spec]
		if st := start[sp.ID]; st.IsZero() || !st.Equal(sp.Submit) {
			continue
		}
		recStart := cj.submit.Add(time.Duration(cj.rec * float64(time.Second)))
		lat = append(lat, max(0, recStart.Sub(sp.Submit).Seconds()))
	}
	if len(lat) < r.spec.MinGroup {
		return nil, len(lat), nil
	}
	slices.Sort(lat)
	tab := make([]time.Duration, LatencyQuantiles)
	for k := range tab {
		x := lat[min(len(lat)-1, int((float64(k)+0.5)/LatencyQuantiles*float64(len(lat))))]
		tab[k] = time.Duration(math.Round(x)) * time.Second
	}
	return tab, len(lat), nil
}

// ReplayStarts replays specs on cfg to the end and returns each job's
// simulated start by id (zero: it never started).
func ReplayStarts(cfg Config, specs []JobSpec) (map[string]time.Time, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Load(specs); err != nil {
		return nil, err
	}
	s.Run(time.Time{})
	start := make(map[string]time.Time, len(specs))
	for _, res := range s.Results() {
		start[res.ID] = res.Start
	}
	return start, nil
}
