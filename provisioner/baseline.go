package provisioner

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Baseline policy names.
const (
	PolicyReactive      = "reactive"       // submit when the predecessor has ended
	PolicyDependency    = "dependency"     // submit at once with afterany on the predecessor
	PolicyLead          = "lead"           // submit a fixed lead time before the predecessor's limit
	PolicyStartEstimate = "start-estimate" // submit when the expected wait covers the predecessor's remaining time
	PolicyPin           = "pin"            // submit at once, pinned to the predecessor's nodes
)

// Defaults of the baseline options.
const (
	// DefaultLead is the lead policy's lead time: one 10-minute decision
	// cycle, so the submission falls in the last cycle before the limit.
	DefaultLead = 10 * time.Minute
	// DefaultSlack is how far ahead of the predecessor's limit the
	// start-estimate policy lets an expected start fall (one cycle).
	DefaultSlack = 10 * time.Minute
	// DefaultRecentJobs is how many recently started jobs give the
	// start-estimate policy its typical wait (the published "average"
	// baseline uses the last 100).
	DefaultRecentJobs = 100
	// DefaultRecentWindow bounds how old those starts may be (the
	// published protocol keeps 24 hours of history).
	DefaultRecentWindow = 24 * time.Hour
	// BeginMargin is how long before its predecessor's limit a pinned
	// policy's successor, submitted unpinned in the last decision cycle
	// (within DefaultLead of the limit, ScaledLead) while whole nodes are free, is
	// asked to start (Decision.Begin, sbatch --begin): without it, it
	// would start at once, up to a whole cycle early. Not for chains that
	// hand off (the training workload), whose early start costs one
	// checkpoint. Slurm notices a begin time at its next scheduling pass
	// (backfill every bf_interval, 30 s by default; the main pass every
	// sched_interval, 60 s), so two minutes leave a whole main pass to
	// start it before the limit.
	BeginMargin = 2 * time.Minute
)

// Leads and hand-offs scale with the segment limit (issue #51). A fixed
// lead longer than a short limit would submit every successor at the first
// cycle; on a free cluster it starts at once and its `mirage handoff` stops
// the predecessor after seconds.
const (
	// leadShareDiv bounds a baseline's lead (and start-estimate's slack):
	// at most a quarter of the predecessor's limit (ScaledLead).
	leadShareDiv = 4
	// minRunDiv sets the least a predecessor runs before mirage stops it
	// or lets its successor start where mirage controls that: half its
	// limit (MinRun).
	minRunDiv = 2
)

// ScaledLead is lead bounded by a quarter of the predecessor's limit
// (unbounded when the limit is not known, limit ≤ 0): with their default
// lead and slack, the lead-based baselines (lead, pin acting as lead,
// start-estimate) never submit before three quarters of the limit have
// run. A quarter keeps
// DefaultLead for every limit of 40 minutes or more — the published
// protocol's 48 hours, and every result in docs/results — and leaves a
// 3-minute segment 45 s of lead.
func ScaledLead(lead, limit time.Duration) time.Duration {
	if limit <= 0 {
		return lead
	}
	return min(lead, limit/leadShareDiv)
}

// MinRun is how long a predecessor with this limit runs before mirage
// stops it for a hand-off (`mirage handoff` signals it no earlier) or
// lifts its successor's pin while it runs: half its limit (0 when the
// limit is not known). A hand-off costs a checkpoint, a restart and, on a
// busy cluster, a wait in the queue; stopping segments before half their
// limit would at least double the segments (and their overhead) the limits
// require. Half lies below the three quarters ScaledLead leaves, so it
// never delays a baseline's hand-off; it bounds early starts a policy's
// model or an early free node bring.
func MinRun(limit time.Duration) time.Duration {
	return max(limit, 0) / minRunDiv
}

// ErrUnknownPolicy is returned for a policy name no registry knows.
var ErrUnknownPolicy = errors.New("unknown policy")

// BaselineNames lists the baseline policies in a stable order.
func BaselineNames() []string {
	return []string{PolicyReactive, PolicyDependency, PolicyLead, PolicyStartEstimate, PolicyPin}
}

// BaselineOption tunes a baseline policy.
type BaselineOption func(*baselineOptions)

type baselineOptions struct {
	lead         time.Duration
	slack        time.Duration
	fixed        bool // lead and slack were given (WithLead, WithSlack): not scaled by the limit
	recentJobs   int
	recentWindow time.Duration
}

// WithLead sets the lead policy's lead time (default DefaultLead, scaled
// by the limit: ScaledLead); a lead given is used as given. The published
// "reactive" baseline (submit 1 minute before the predecessor ends) is
// BaselinePolicy("lead", WithLead(time.Minute)).
func WithLead(d time.Duration) BaselineOption {
	return func(o *baselineOptions) { o.lead, o.fixed = d, true }
}

// WithSlack sets the start-estimate policy's slack (default DefaultSlack,
// scaled by the limit: ScaledLead); a slack given is used as given.
func WithSlack(d time.Duration) BaselineOption {
	return func(o *baselineOptions) { o.slack, o.fixed = d, true }
}

// WithRecentJobs sets how many recent starts the start-estimate policy
// takes its typical wait from, and how old they may be.
func WithRecentJobs(n int, window time.Duration) BaselineOption {
	return func(o *baselineOptions) { o.recentJobs, o.recentWindow = n, window }
}

// BaselinePolicy builds one of the baseline policies by name. All are
// stateless and share these rules: a predecessor that is absent or has
// ended gives SubmitNow; a pending predecessor gives Wait (a successor
// would only queue behind it; the engine does not even ask then). Then:
//
//   - reactive: Wait while the predecessor runs. Under a 10-minute decision
//     cycle the successor is therefore submitted at the first cycle after
//     the predecessor ends (the engine submits at once when it sees the end).
//     The published variant, "1 minute before the predecessor ends", needs
//     the end to be known in advance; it is the lead policy with
//     WithLead(time.Minute).
//   - dependency: SubmitAfter as soon as the predecessor runs (the engine
//     adds --dependency=afterany:PREDECESSOR); the scheduler releases the
//     successor when the predecessor ends.
//   - lead: with E = predecessor start + its time limit, SubmitNow once
//     now ≥ E − lead (DefaultLead, at most a quarter of the limit:
//     ScaledLead; or WithLead's, as given), Wait before.
//   - start-estimate: with R = E − now the predecessor's remaining time and
//     W the expected wait of a successor submitted now, SubmitNow once
//     W ≥ R − slack (DefaultSlack, at most a quarter of the limit:
//     ScaledLead; or WithSlack's, as given), Wait before. W is, in order:
//     (a) the latest scheduler estimate (Job.EstStart, squeue --start) among
//     pending jobs of the successor's shape (same partition when it names
//     one, same node and GPU counts), minus now, at least 0 — a successor
//     submitted now would queue behind them; (b) otherwise the median wait
//     (start − submit) of the last DefaultRecentJobs jobs in the history
//     that started within DefaultRecentWindow; (c) otherwise 0 (nothing
//     suggests a wait). On an empty cluster it therefore behaves like lead
//     with a lead equal to the slack.
//   - pin: while enough whole nodes of the successor's shape are free
//     (idle, in its partition), behave as lead: Wait, then SubmitNow once
//     now ≥ E − lead. Once they are not, SubmitPinned (when the
//     predecessor's nodes are known, Job.NodeList): the successor queues
//     from then on but may only start on its predecessor's nodes (the
//     engine adds --nodelist), so it never overlaps it, and the scheduler
//     plans those nodes for it. If another job takes them as the
//     predecessor ends, the engine lifts the node list (Unpinner) and the
//     successor, aged since its submission, may start anywhere; under a
//     cost that prices an early start below an equal interruption it also
//     does so within the lead when whole nodes are free elsewhere and, in
//     a chain that does not hand off, spare (no pending job waits for
//     them: it would jump ahead of the jobs they are kept for). Where the
//     successor would fit beside its predecessor on the predecessor's nodes
//     (nodes shared between jobs), a pin cannot keep them apart and pin
//     acts as lead. Acting as lead in the last cycle before E, it asks the
//     scheduler to start the successor at E − BeginMargin (sbatch --begin),
//     not at once, unless the chain hands off (see Pinned).
//
// Decision.Score is the gap predicted if the successor were submitted now
// (seconds; negative means overlap) where the policy estimates one.
func BaselinePolicy(name string, opts ...BaselineOption) (Policy, error) {
	o := baselineOptions{lead: DefaultLead, slack: DefaultSlack, recentJobs: DefaultRecentJobs, recentWindow: DefaultRecentWindow}
	for _, f := range opts {
		f(&o)
	}
	if o.lead < 0 || o.slack < 0 || o.recentJobs <= 0 || o.recentWindow <= 0 {
		return nil, fmt.Errorf("baseline %s: lead, slack and window must not be negative and recent jobs positive", name)
	}
	switch name {
	case PolicyReactive:
		return reactive{}, nil
	case PolicyDependency:
		return dependency{}, nil
	case PolicyLead:
		return lead{o.lead, o.fixed}, nil
	case PolicyStartEstimate:
		return startEstimate{o}, nil
	case PolicyPin:
		return Pinned(PolicyPin, lead{o.lead, o.fixed}), nil
	}
	return nil, fmt.Errorf("%w %q (baselines: %v)", ErrUnknownPolicy, name, BaselineNames())
}

// Reasons shared by the baselines.
const (
	ReasonPredecessorEnded   = "predecessor has ended: submit"
	ReasonPredecessorQueued  = "predecessor still pending: a successor would only queue behind it: wait"
	ReasonPredecessorRunning = "predecessor still running: wait for it to end"
)

// common applies the shared rules; done is true when they decided.
func common(obs *Observation) (Decision, bool) {
	p := obs.Predecessor
	switch {
	case p == nil || p.State.Finished():
		return Decision{Action: SubmitNow, Reason: ReasonPredecessorEnded}, true
	case p.State == StatePending:
		return Decision{Action: Wait, Reason: ReasonPredecessorQueued}, true
	}
	return Decision{}, false
}

// limitOf is the running predecessor's limit: its job's, else its
// chain's; 0 when neither is known.
func limitOf(obs *Observation) time.Duration {
	lim := obs.Predecessor.TimeLimit
	if lim <= 0 && obs.Chain != nil {
		lim = obs.Chain.TimeLimit
	}
	return max(lim, 0)
}

// limitEnd is when the running predecessor reaches its limit.
func limitEnd(obs *Observation) (time.Time, bool) {
	lim := limitOf(obs)
	if lim <= 0 || obs.Predecessor.Start.IsZero() {
		return time.Time{}, false
	}
	return obs.Predecessor.Start.Add(lim), true
}

// leadText renders a lead for reasons: the lead used, and the one asked
// for when the limit bounded it (ScaledLead).
func leadText(asked, used time.Duration) string {
	if used == asked {
		return secs(used)
	}
	return fmt.Sprintf("%s (%s bounded by a quarter of the limit)", secs(used), secs(asked))
}

type reactive struct{}

func (reactive) Name() string { return PolicyReactive }

func (reactive) Decide(obs *Observation) (Decision, error) {
	if d, ok := common(obs); ok {
		return d, nil
	}
	return Decision{Action: Wait, Reason: ReasonPredecessorRunning}, nil
}

type dependency struct{}

func (dependency) Name() string { return PolicyDependency }

func (dependency) Decide(obs *Observation) (Decision, error) {
	if d, ok := common(obs); ok {
		return d, nil
	}
	p := obs.Predecessor
	return Decision{Action: SubmitAfter, Reason: fmt.Sprintf("predecessor %s %s: submit now, held by the scheduler until it ends", p.ID, p.State)}, nil
}

// lead is the lead policy: its lead, used as given when fixed, else
// scaled by the predecessor's limit (ScaledLead).
type lead struct {
	lead  time.Duration
	fixed bool
}

// scaled is the option d for a predecessor with this limit: as given when
// fixed, else bounded by a quarter of the limit.
func scaled(d time.Duration, fixed bool, limit time.Duration) time.Duration {
	if fixed {
		return d
	}
	return ScaledLead(d, limit)
}

func (lead) Name() string { return PolicyLead }

func (l lead) Decide(obs *Observation) (Decision, error) {
	if d, ok := common(obs); ok {
		return d, nil
	}
	end, ok := limitEnd(obs)
	if !ok {
		return Decision{Action: Wait, Reason: "predecessor's time limit or start unknown: wait for it to end"}, nil
	}
	lead := scaled(l.lead, l.fixed, limitOf(obs))
	at := end.Add(-lead)
	score := -end.Sub(obs.Now).Seconds() // gap if the successor started at once
	if !obs.Now.Before(at) {
		return Decision{Action: SubmitNow, Score: score, Reason: fmt.Sprintf("predecessor reaches its limit at %s, in %s; lead %s: submit",
			end.UTC().Format(time.RFC3339), secs(end.Sub(obs.Now)), leadText(l.lead, lead))}, nil
	}
	return Decision{Action: Wait, Score: score, Reason: fmt.Sprintf("predecessor reaches its limit at %s; lead %s: submit from %s (in %s)",
		end.UTC().Format(time.RFC3339), leadText(l.lead, lead), at.UTC().Format(time.RFC3339), secs(at.Sub(obs.Now)))}, nil
}

type startEstimate struct{ o baselineOptions }

func (startEstimate) Name() string { return PolicyStartEstimate }

func (s startEstimate) Decide(obs *Observation) (Decision, error) {
	if d, ok := common(obs); ok {
		return d, nil
	}
	end, ok := limitEnd(obs)
	if !ok {
		return Decision{Action: Wait, Reason: "predecessor's time limit or start unknown: wait for it to end"}, nil
	}
	remaining := end.Sub(obs.Now)
	wait, source := s.expectedWait(obs)
	slack := scaled(s.o.slack, s.o.fixed, limitOf(obs))
	d := Decision{Score: (wait - remaining).Seconds()}
	if wait >= remaining-slack {
		d.Action = SubmitNow
		d.Reason = fmt.Sprintf("expected wait %s (%s) ≥ predecessor's remaining %s − slack %s: submit", secs(wait), source, secs(remaining), leadText(s.o.slack, slack))
	} else {
		d.Action = Wait
		d.Reason = fmt.Sprintf("expected wait %s (%s) < predecessor's remaining %s − slack %s: wait", secs(wait), source, secs(remaining), leadText(s.o.slack, slack))
	}
	return d, nil
}

// expectedWait is W of the start-estimate policy, with where it came from.
func (s startEstimate) expectedWait(obs *Observation) (time.Duration, string) {
	req := &obs.Successor
	nodes := max(req.Nodes, 1)
	var latest time.Time
	n := 0
	if obs.Snapshot != nil {
		for i := range obs.Snapshot.Jobs {
			j := &obs.Snapshot.Jobs[i]
			if j.State != StatePending || j.EstStart.IsZero() || max(j.Nodes, 1) != nodes || j.GPUs != req.GPUs ||
				req.Partition != "" && j.Partition != req.Partition {
				continue
			}
			n++
			if j.EstStart.After(latest) {
				latest = j.EstStart
			}
		}
	}
	if n > 0 {
		return max(latest.Sub(obs.Now), 0), fmt.Sprintf("latest scheduler estimate of %d pending job(s) of the successor's shape", n)
	}
	from := obs.Now.Add(-s.o.recentWindow)
	waits := make([]time.Duration, 0, s.o.recentJobs)
	for i := len(obs.History) - 1; i >= 0 && len(waits) < s.o.recentJobs; i-- {
		j := &obs.History[i]
		if j.Start.IsZero() || j.Submit.IsZero() || j.Start.Before(from) || j.Start.After(obs.Now) {
			continue
		}
		waits = append(waits, j.Start.Sub(j.Submit))
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		med := waits[len(waits)/2]
		if len(waits)%2 == 0 {
			med = (waits[len(waits)/2-1] + waits[len(waits)/2]) / 2
		}
		return max(med, 0), fmt.Sprintf("median wait of the last %d started jobs", len(waits))
	}
	return 0, "no estimate and no recent starts: assume an immediate start"
}
