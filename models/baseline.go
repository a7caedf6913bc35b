package models

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
)

// Registry names of the baselines implemented in this package.
const (
	PolicyAverage  = "average"  // predecessor end minus the mean wait of the last 100 started jobs
	PolicyQuantile = "quantile" // predecessor end minus a QBETS-style upper bound on a quantile of recent waits
	PolicyOracle   = "oracle"   // knows the future through a simulator probe (evaluation only)
)

// expectedEnd is when the running predecessor ends if it uses its whole
// limit (what every baseline assumes: the protocol's segments do).
func expectedEnd(p *provisioner.Job) time.Time { return p.Start.Add(p.TimeLimit) }

// gate handles the cases every policy treats alike: no or a finished
// predecessor (submit), a pending one (wait). ok is false when the policy
// itself must decide.
func gate(obs *provisioner.Observation) (d provisioner.Decision, ok bool) {
	pred := obs.Predecessor
	switch {
	case pred == nil || pred.State.Finished():
		return provisioner.Decision{Action: provisioner.SubmitNow, Reason: ReasonNoPredecessor}, true
	case pred.State == provisioner.StatePending || pred.Start.IsZero():
		return provisioner.Decision{Action: provisioner.Wait, Reason: ReasonPredecessorPending}, true
	}
	return provisioner.Decision{}, false
}

// recentWaits returns the waits (seconds) of the last n jobs of the
// history that started in the 24 hours before now, by start time (all of
// them when n ≤ 0).
func recentWaits(obs *provisioner.Observation, n int) []float64 {
	var started []*provisioner.Job
	for i := range obs.History {
		j := &obs.History[i]
		if !j.Start.IsZero() && !j.Start.After(obs.Now) && obs.Now.Sub(j.Start) < provisioner.DefaultHistoryWindow && !j.Submit.IsZero() {
			started = append(started, j)
		}
	}
	slices.SortStableFunc(started, func(a, b *provisioner.Job) int { return a.Start.Compare(b.Start) })
	if n > 0 && len(started) > n {
		started = started[len(started)-n:]
	}
	out := make([]float64, len(started))
	for i, j := range started {
		out[i] = j.Start.Sub(j.Submit).Seconds()
	}
	return out
}

// leadDecision submits when the predecessor's expected end is at most lead away.
func leadDecision(obs *provisioner.Observation, name string, lead time.Duration, what string) provisioner.Decision {
	left := expectedEnd(obs.Predecessor).Sub(obs.Now)
	d := provisioner.Decision{Action: provisioner.Wait, Score: lead.Seconds()}
	if left <= lead {
		d.Action = provisioner.SubmitNow
		d.Reason = fmt.Sprintf("%s: predecessor ends in %s ≤ %s (%s): submit", name, left.Round(time.Minute), lead.Round(time.Minute), what)
	} else {
		d.Reason = fmt.Sprintf("%s: predecessor ends in %s > %s (%s): wait", name, left.Round(time.Minute), lead.Round(time.Minute), what)
	}
	return d
}

// AveragePolicy submits when now ≥ predecessor end − the mean wait of the
// last Window jobs that started in the last 24 hours (from
// Observation.History): the published "average" baseline. With no started job in the history it waits (the
// caller's deadline submission then applies).
type AveragePolicy struct {
	Window int // jobs averaged (default 100)
}

// Name implements provisioner.Policy.
func (p *AveragePolicy) Name() string { return PolicyAverage }

// Decide implements provisioner.Policy.
func (p *AveragePolicy) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	if d, ok := gate(obs); ok {
		return d, nil
	}
	n := p.Window
	if n <= 0 {
		n = features.HistoryStarts
	}
	w := recentWaits(obs, n)
	if len(w) == 0 {
		return provisioner.Decision{Action: provisioner.Wait, Reason: PolicyAverage + ": no started jobs in the history: wait"}, nil
	}
	lead := time.Duration(Mean(w) * float64(time.Second))
	return leadDecision(obs, PolicyAverage, lead, fmt.Sprintf("mean wait of the last %d starts", len(w))), nil
}

// QuantilePolicy is a QBETS-style baseline (Nurmi, Brevik and Wolski,
// "QBETS: Queue Bounds Estimation from Time Series", 2007): from the waits
// w(1) ≤ … ≤ w(n) of the last Window jobs that started, the upper
// Confidence-level bound on the Quantile-th quantile of the wait is the
// order statistic w(k) with the smallest k such that
// P(Binomial(n, Quantile) ≤ k−1) ≥ Confidence: with probability at least
// Confidence, at least a Quantile share of waits is ≤ w(k). The policy
// submits when now ≥ predecessor end − that bound. When n is too small for
// the confidence (k > n) the largest wait is used and the reason says so.
//
// Defaults: Quantile 0.95 and Confidence 0.95, QBETS's own operating point,
// over the last 100 starts (k = 99 of 100). The published Mirage baseline
// used the 0.99 quantile; with 100 waits its 0.95-confidence bound is the
// largest wait, which only adds overlap, so 0.95 is the stronger baseline
// to beat on |gap|. Set Quantile to 0.99 to reproduce it.
type QuantilePolicy struct {
	Quantile   float64 `json:"quantile,omitempty"`   // quantile bounded (default 0.95)
	Confidence float64 `json:"confidence,omitempty"` // confidence of the upper bound (default 0.95)
	Window     int     `json:"window,omitempty"`     // jobs (default 100)
}

// Name implements provisioner.Policy.
func (p *QuantilePolicy) Name() string { return PolicyQuantile }

// QBETSBound returns the 1-based rank k of the order statistic bounding
// quantile q with confidence c among n samples: the smallest k with
// P(Binomial(n, q) ≤ k−1) ≥ c. It returns n+1 when even the largest sample
// is not enough.
func QBETSBound(n int, q, c float64) int {
	cdf := 0.0
	for k := 1; k <= n; k++ {
		cdf += binomPMF(n, k-1, q)
		if cdf >= c {
			return k
		}
	}
	return n + 1
}

// binomPMF is P(Binomial(n, q) = i), computed in logs.
func binomPMF(n, i int, q float64) float64 {
	if q <= 0 {
		if i == 0 {
			return 1
		}
		return 0
	}
	if q >= 1 {
		if i == n {
			return 1
		}
		return 0
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(q) + float64(n-i)*math.Log1p(-q))
}

// Decide implements provisioner.Policy.
func (p *QuantilePolicy) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	if d, ok := gate(obs); ok {
		return d, nil
	}
	q, c, n := p.Quantile, p.Confidence, p.Window
	if q <= 0 || q >= 1 {
		q = 0.95
	}
	if c <= 0 || c >= 1 {
		c = 0.95
	}
	if n <= 0 {
		n = features.HistoryStarts
	}
	w := recentWaits(obs, n)
	if len(w) == 0 {
		return provisioner.Decision{Action: provisioner.Wait, Reason: PolicyQuantile + ": no started jobs in the history: wait"}, nil
	}
	slices.Sort(w)
	k := QBETSBound(len(w), q, c)
	what := fmt.Sprintf("%.0f%%-confidence bound on the %.2f quantile of %d waits", c*100, q, len(w))
	if k > len(w) {
		k = len(w)
		what += ", too few for the confidence: the largest"
	}
	lead := time.Duration(w[k-1] * float64(time.Second))
	return leadDecision(obs, PolicyQuantile, lead, what), nil
}

// OracleProbe answers, for the observation's chain, the gap (successor
// start − predecessor end) if the successor were submitted after a delay
// from obs.Now. Only a simulator can answer it: the evaluation harness
// supplies one bound to the chain's simulator state.
type OracleProbe func(obs *provisioner.Observation, after time.Duration) (time.Duration, error)

// ErrNoProbe: the oracle was asked for outside the simulator harness.
var ErrNoProbe = errors.New("the oracle knows the future only inside the simulator: it is a bound for mirage eval, and no chain can use it")

// OraclePolicy knows the future: an upper bound for evaluation, never a
// policy for a real cluster. The first time it is asked about a chain's
// predecessor it probes the gap of submitting the successor at every
// remaining decision instant (now, now + Interval, … while before the
// forced submission, and the forced submission Lead before the
// predecessor's end) and plans the instant of smallest |gap| (the earliest
// on ties); it then submits when that instant comes. The gap is not
// monotone in the submission time (a backfill reservation can make ten
// minutes of delay cost days), so a one-step lookahead would not do.
//
// State: the plan is kept per chain and predecessor (documented exception
// to Policy's no-state rule); the harness asks about one chain at a time,
// every Interval from the same start, as the plan assumes.
type OraclePolicy struct {
	Probe    OracleProbe   // gap if submitted after a delay
	Interval time.Duration // decision interval (default 10 min)
	Lead     time.Duration // the harness's forced submission before the predecessor's end (default 1 min)
	// Cost prices a gap for the plan (nil: |gap|, the published symmetric
	// cost): the oracle of a workload's cost plans the instant of least cost.
	Cost func(gap time.Duration) float64
	// OnTicks: the harness decides only every Interval (the chain
	// protocols' daemon cycle), so the plan considers only those instants,
	// up to the first at or after the predecessor's expected end, instead
	// of adding the forced submission Lead before it.
	OnTicks bool

	mu    sync.Mutex
	plans map[string]oraclePlan
}

type oraclePlan struct {
	at  time.Time     // planned submission instant
	gap time.Duration // its gap
}

// NewOracle returns the oracle with the harness's probe, decision interval and forced-submission lead.
func NewOracle(probe OracleProbe, interval, lead time.Duration) (*OraclePolicy, error) {
	if probe == nil {
		return nil, ErrNoProbe
	}
	return &OraclePolicy{Probe: probe, Interval: interval, Lead: lead}, nil
}

// Name implements provisioner.Policy.
func (p *OraclePolicy) Name() string { return PolicyOracle }

// Decide implements provisioner.Policy.
func (p *OraclePolicy) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	if d, ok := gate(obs); ok {
		return d, nil
	}
	if p.Probe == nil {
		return provisioner.Decision{}, ErrNoProbe
	}
	iv, lead := p.Interval, p.Lead
	if iv <= 0 {
		iv = 10 * time.Minute
	}
	if lead <= 0 {
		lead = time.Minute
	}
	key := obs.Predecessor.ID
	if obs.Chain != nil {
		key = obs.Chain.ID + "/" + key
	}
	p.mu.Lock()
	plan, ok := p.plans[key]
	p.mu.Unlock()
	if !ok {
		forced := expectedEnd(obs.Predecessor).Add(-lead).Sub(obs.Now)
		var offsets []time.Duration
		for a := time.Duration(0); a < forced; a += iv {
			offsets = append(offsets, a)
		}
		if p.OnTicks {
			end := expectedEnd(obs.Predecessor).Sub(obs.Now)
			offsets = offsets[:0]
			a := time.Duration(0)
			for ; a < end; a += iv {
				offsets = append(offsets, a)
			}
			offsets = append(offsets, a) // the first tick at or after the end: reactive
		} else {
			offsets = append(offsets, max(forced, 0))
		}
		for i, a := range offsets {
			g, err := p.Probe(obs, a)
			if err != nil {
				return provisioner.Decision{}, fmt.Errorf("oracle: %w", err)
			}
			if i == 0 || p.cost(g) < p.cost(plan.gap) {
				plan = oraclePlan{at: obs.Now.Add(a), gap: g}
			}
		}
		p.mu.Lock()
		if p.plans == nil {
			p.plans = map[string]oraclePlan{}
		}
		p.plans[key] = plan
		p.mu.Unlock()
	}
	d := provisioner.Decision{Action: provisioner.Wait, Score: plan.gap.Seconds()}
	if !obs.Now.Before(plan.at) {
		d.Action = provisioner.SubmitNow
		d.Reason = fmt.Sprintf("oracle: submitting now gives the least costly reachable gap (%s): submit", plan.gap.Round(time.Minute))
		p.mu.Lock()
		delete(p.plans, key)
		p.mu.Unlock()
		return d, nil
	}
	d.Reason = fmt.Sprintf("oracle: the least costly gap (%s) comes at %s: wait", plan.gap.Round(time.Minute), plan.at.Format(time.RFC3339))
	return d, nil
}

func (p *OraclePolicy) cost(gap time.Duration) float64 {
	if p.Cost == nil {
		return float64(absDur(gap))
	}
	return p.Cost(gap)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
