package models

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/models/adapt"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
)

// DefaultMaxOverlap is how much overlap a regression policy accepts when it
// submits: the published design submits when the predicted gap says overlap
// ≤ 30 minutes (the same boundary as SafeGapThreshold).
const DefaultMaxOverlap = 30 * time.Minute

// Regression targets a chain policy's model may predict.
const (
	// TargetGap: the signed gap (seconds) if the successor is submitted now.
	TargetGap = "gap"
	// TargetWait: the successor's queue wait (seconds) if submitted now;
	// the gap is that wait minus the predecessor's remaining time
	// (limit − elapsed), which the policy knows exactly. Trees fit the wait
	// far better than the gap, whose largest part (the remaining time) is
	// a straight line they can only approximate in steps.
	TargetWait = "wait"
)

// DecisionRule is how a policy turns its model's output into a decision,
// stored in meta.json: it submits when the score reaches Threshold, where
// the score is the predicted gap in seconds (regression; from the
// predicted wait when Target is TargetWait), P(safe) (classification) or
// the preference for submitting (dqn, pg).
//
// BySize, when set, overrides Threshold by chain size (nodes per
// segment): the entry with the nearest size applies (the smaller on ties).
// Chains of different sizes face different regimes (a one-node successor
// usually takes its predecessor's node as it ends, an eight-node one waits
// for a reservation), and one threshold cannot serve both.
type DecisionRule struct {
	Target    string          `json:"target,omitempty"`  // regression target: TargetGap (default) or TargetWait
	Threshold float64         `json:"threshold"`         // submit when score ≥ Threshold
	BySize    []SizeThreshold `json:"by_size,omitempty"` // per chain size, overriding Threshold
	Tuned     string          `json:"tuned,omitempty"`   // how the thresholds were chosen (e.g. "min mean cost on the calibration split")
	// Hold (hours, 0: off) keeps the policy from submitting while the
	// scheduler's plan (the successor placed ahead of the pending queue,
	// every running job running to its limit: plan_gap_first_h) starts the
	// successor more than Hold before its predecessor ends: resources are
	// free long before they are needed, and an early submission would buy
	// overlap. It is tuned with the thresholds (0 when holding never paid).
	Hold float64 `json:"hold_h,omitempty"`
	// ByWorkload holds thresholds tuned on the same calibration split for
	// each workload's cost (provisioner.WorkloadCost): a chain of that
	// workload decides with them. The model is the same; only where it
	// submits moves with what a gap costs.
	ByWorkload map[string]WorkloadRule `json:"by_workload,omitempty"`
	// Online, when set, makes the policy online (xgb-online): a do-no-harm
	// guard and thresholds that move with the realised hand-offs.
	Online *OnlineRule `json:"online,omitempty"`
	// WaitShift moves a wait model's prediction on its log1p(wait/60 s)
	// scale (split conformal calibration: the shift at which the predicted
	// quantile covers its share of the calibration split's waits).
	WaitShift float64 `json:"wait_shift,omitempty"`
	// Floor, when set, submits whenever a QBETS bound on recent waits
	// (QuantilePolicy) says so, whatever the model says: the rule of a cost
	// whose successors hand off, where submitting early is cheap and a
	// model that underestimates a surge of waits is costly.
	Floor *QuantilePolicy `json:"floor,omitempty"`
}

// OnlineRule is the online part of a decision rule (xgb-online):
//
//   - the guard: a classifier (GuardDir beside the model) of "this hand-off
//     is in the low load class" (the successor submitted at the deadline
//     would start within 2 h). While it says so with probability ≥ Gamma
//     the policy waits, and the successor is submitted when its
//     predecessor ends, where an early start could only cost overlap;
//   - online thresholds (models/adapt): each size's threshold moves by Step
//     against the sign of every realised gap beyond DeadBand, among the
//     hand-offs of the policy's own chains known since Since (the end of
//     the model's training data: a retrained model starts afresh, as in
//     the walk-forward evaluation).
type OnlineRule struct {
	Gamma    float64   `json:"guard_level"` // guard level (≥ 1: guard off)
	Step     float64   `json:"step_s"`      // threshold change per outcome (seconds; 0: no adaptation)
	DeadBand float64   `json:"dead_band_s"` // |gap| at or below this moves nothing (seconds)
	Since    time.Time `json:"since"`       // outcomes known before this are ignored
}

// GuardDir is the sub-directory of an online policy's model directory
// holding its guard classifier.
const GuardDir = "guard"

// String says what the rule does, for mirage models show.
func (o *OnlineRule) String() string {
	guard := "no guard"
	if o.GuardOn() {
		guard = fmt.Sprintf("wait while the guard's P(low load) ≥ %.2f", o.Gamma)
	}
	moves := "thresholds fixed"
	if c := o.Adapt(); c.Step > 0 {
		moves = fmt.Sprintf("thresholds move %s per hand-off beyond ±%s known since %s", c.Step, c.DeadBand, o.Since.UTC().Format(time.RFC3339))
	}
	return guard + ", " + moves
}

// GuardOn reports whether the rule has a guard (Gamma < 1).
func (o *OnlineRule) GuardOn() bool { return o != nil && o.Gamma < 1 }

// Guarded reports whether the guard's probability of the low load class
// keeps the policy from submitting early.
func (o *OnlineRule) Guarded(pLow float64) bool { return o.GuardOn() && pLow >= o.Gamma }

// Adapt is the configuration of the online thresholds.
func (o *OnlineRule) Adapt() adapt.Config {
	if o == nil {
		return adapt.Off
	}
	return adapt.Config{Step: time.Duration(o.Step * float64(time.Second)), DeadBand: time.Duration(o.DeadBand * float64(time.Second))}
}

// Offset is the online threshold offset (seconds) for a chain of nodes
// nodes at now, from the hand-offs of policy's chains known since o.Since
// (hs sorted by Known, as the engine gives them).
func (o *OnlineRule) Offset(policy string, nodes int, now time.Time, hs []provisioner.HandOff) float64 {
	cfg := o.Adapt()
	if cfg.Step <= 0 {
		return 0
	}
	th := adapt.New(cfg)
	for _, h := range hs {
		if h.Policy == policy && h.Nodes == nodes && !h.Known.Before(o.Since) {
			th.Observe(adapt.Outcome{At: h.Known, Nodes: h.Nodes, Gap: h.Gap})
		}
	}
	return th.Offset(nodes, now).Seconds()
}

// WorkloadRule is the part of a DecisionRule tuned for one workload's cost.
type WorkloadRule struct {
	Threshold float64         `json:"threshold"`
	BySize    []SizeThreshold `json:"by_size,omitempty"`
	Tuned     string          `json:"tuned,omitempty"`
}

// ForWorkload is the rule a chain of workload w decides with: the one
// tuned for w, or the rule itself for "" (the cost the model was trained
// for). ok is false when the model has no thresholds for w: the rule
// itself is returned, and the caller says so.
func (r DecisionRule) ForWorkload(w string) (DecisionRule, bool) {
	if w == "" {
		return r, true
	}
	wr, ok := r.ByWorkload[w]
	if !ok {
		return r, false
	}
	r.Threshold, r.BySize, r.Tuned = wr.Threshold, wr.BySize, wr.Tuned
	return r, true
}

// SizeThreshold is the threshold for chains of one size.
type SizeThreshold struct {
	Nodes     int     `json:"nodes"`     // nodes per segment
	Threshold float64 `json:"threshold"` // submit when score ≥ Threshold
}

// For returns the threshold for chains of nodes nodes.
func (r DecisionRule) For(nodes int) float64 {
	best, bestD := r.Threshold, -1
	for _, st := range r.BySize {
		d := st.Nodes - nodes
		if d < 0 {
			d = -d
		}
		if bestD < 0 || d < bestD || (d == bestD && st.Nodes < nodes) {
			best, bestD = st.Threshold, d
		}
	}
	return best
}

// DefaultDecisionRule is the published rule for a task: regression submits
// when the predicted gap ≥ −30 min, classification when P(safe) ≥ 0.5, a
// learned policy when its preference for submitting ≥ 0.
func DefaultDecisionRule(task Task) DecisionRule {
	switch task {
	case Regression:
		return DecisionRule{Target: TargetGap, Threshold: -DefaultMaxOverlap.Seconds()}
	case Classification:
		return DecisionRule{Threshold: 0.5}
	}
	return DecisionRule{}
}

// ruleOf returns the model's stored rule or the task's default.
func ruleOf(m Meta) DecisionRule {
	if m.Decision != nil {
		r := *m.Decision
		if m.Task == Regression && r.Target == "" {
			r.Target = TargetGap
		}
		return r
	}
	return DefaultDecisionRule(m.Task)
}

// Score maps a raw model output y to the rule's score given the
// predecessor's remaining time (seconds): for TargetWait the predicted gap
// y − left, otherwise y itself.
func (r DecisionRule) Score(task Task, y, leftSec float64) float64 {
	if task == Regression && r.Target == TargetWait {
		return ShiftWait(y, r.WaitShift) - leftSec
	}
	return y
}

// ShiftWait moves a predicted wait (seconds) by shift on the
// log1p(wait/60 s) scale the wait models are fitted on.
func ShiftWait(wait, shift float64) float64 {
	if shift == 0 {
		return wait
	}
	return math.Expm1(math.Log1p(math.Max(wait, 0)/60)+shift) * 60
}

// planGapFirst is the chain schema's index of plan_gap_first_h, Hold's feature.
var planGapFirst = slices.Index(features.Schema().Fields, "plan_gap_first_h")

// Held reports whether Hold keeps the policy from submitting at features x
// (of the chain schema).
func (r DecisionRule) Held(x []float64) bool {
	return r.Hold > 0 && planGapFirst >= 0 && planGapFirst < len(x) && x[planGapFirst] < -r.Hold
}

// Submit reports whether a score reaches the threshold for chains of nodes nodes.
func (r DecisionRule) Submit(score float64, nodes int) bool { return score >= r.For(nodes) }

// ModelPolicy turns a trained Model into a provisioner.Policy: features from
// the observation, one prediction, one decision by the model's DecisionRule
// (meta.json), or the published default rule when the model has none.
//
// Without a running predecessor there is nothing to wait for: a finished or
// absent predecessor gives SubmitNow, a pending one gives Wait (the
// successor would only queue behind it). Decide keeps no state and may be
// called concurrently when the model's Predict may.
type ModelPolicy struct {
	PolicyName string       // registry name, e.g. "xgb"
	Model      Model        // trained on Schema()
	Rule       DecisionRule // decision rule (from meta.json, or the default)
	// Version identifies the trained model in the decision log's reasons
	// ("xgb@VERSION: ..."): its training time from meta.json, RFC 3339 in
	// UTC. Empty: the reasons name the policy only.
	Version string
	// Workloads holds the policies of the models fitted for a workload's
	// cost: a chain of that workload decides with its own.
	Workloads map[string]*ModelPolicy
	// Guard is the online rule's guard classifier (Rule.Online; nil: no guard).
	Guard Model
}

// NewModelPolicy wraps m, refusing a model trained on another feature schema.
func NewModelPolicy(name string, m Model) (*ModelPolicy, error) {
	if err := features.CheckSchema(m.Meta().Schema, features.Schema()); err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	p := &ModelPolicy{PolicyName: name, Model: m, Rule: ruleOf(m.Meta())}
	if c := m.Meta().Created; !c.IsZero() {
		p.Version = c.UTC().Format(time.RFC3339)
	}
	return p, nil
}

// label names the policy and its model's version in reasons.
func (p *ModelPolicy) label() string {
	if p.Version == "" {
		return p.PolicyName
	}
	return p.PolicyName + "@" + p.Version
}

// Name implements provisioner.Policy.
func (p *ModelPolicy) Name() string { return p.PolicyName }

// LearnsFromHandOffs implements provisioner.HandOffLearner: an online rule
// with a step moves its thresholds with the hand-offs it is given.
func (p *ModelPolicy) LearnsFromHandOffs() bool {
	if p.Rule.Online.Adapt().Step > 0 {
		return true
	}
	for _, wp := range p.Workloads {
		if wp.LearnsFromHandOffs() {
			return true
		}
	}
	return false
}

// Reasons recorded in the decision log when no model is consulted.
const (
	ReasonNoPredecessor      = "no running predecessor: submit"  // predecessor absent or finished
	ReasonPredecessorPending = "predecessor still pending: wait" // predecessor not started yet
)

// Decide implements provisioner.Policy.
func (p *ModelPolicy) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	if d, ok := gate(obs); ok {
		return d, nil
	}
	if obs.Chain != nil && obs.Chain.Cost == nil {
		if wp := p.Workloads[obs.Chain.Workload]; wp != nil {
			d, err := wp.Decide(obs)
			d.Reason = strings.Replace(d.Reason, "workload's thresholds)", "workload's model)", 1)
			return d, err
		}
	}
	var buf [128]float64
	x, err := features.AppendFeatures(buf[:0], obs)
	if err != nil {
		return provisioner.Decision{}, fmt.Errorf("policy %s: %w", p.PolicyName, err)
	}
	y, err := p.Model.Predict(x)
	if err != nil {
		return provisioner.Decision{}, fmt.Errorf("policy %s: %w", p.PolicyName, err)
	}
	task := p.Model.Meta().Task
	left := math.Max(0, expectedEnd(obs.Predecessor).Sub(obs.Now).Seconds())
	score := p.Rule.Score(task, y, left)
	d := provisioner.Decision{Action: provisioner.Wait, Score: score}
	nodes := obs.Successor.Nodes
	if nodes == 0 && obs.Chain != nil {
		nodes = obs.Chain.Nodes
	}
	rule, note := p.Rule, ""
	if obs.Chain != nil && obs.Chain.Cost == nil && obs.Chain.Workload != "" {
		var ok bool
		if rule, ok = p.Rule.ForWorkload(obs.Chain.Workload); ok {
			note = fmt.Sprintf(" (the %s workload's thresholds)", obs.Chain.Workload)
		} else {
			note = fmt.Sprintf(" (thresholds of the training cost: the model has none for the %s workload; retrain it with this mirage)", obs.Chain.Workload)
		}
	} else if obs.Chain != nil && obs.Chain.Cost != nil {
		note = fmt.Sprintf(" (thresholds of the training cost, not of the chain's own weights %s)", obs.Chain.Cost)
	}
	th := rule.For(nodes)
	if o := rule.Online; o != nil {
		if off := o.Offset(p.PolicyName, nodes, obs.Now, obs.HandOffs); off != 0 {
			th += off
			note += fmt.Sprintf(" (threshold moved %s by the realised hand-offs)", signedDur(off))
		}
	}
	submit := score >= th
	if submit && rule.Online != nil && p.Guard != nil {
		pLow, err := p.Guard.Predict(x)
		if err != nil {
			return provisioner.Decision{}, fmt.Errorf("policy %s guard: %w", p.PolicyName, err)
		}
		if rule.Online.Guarded(pLow) {
			d.Reason = fmt.Sprintf("%s: guard: P(low load)=%.2f ≥ %.2f: wait; the successor is submitted when its predecessor ends, where an early start could only cost overlap%s",
				p.label(), pLow, rule.Online.Gamma, note)
			return d, nil
		}
	}
	if submit && rule.Held(x) {
		d.Reason = fmt.Sprintf("%s: the scheduler's plan starts the successor %s before its predecessor ends, more than the hold of %s: wait%s",
			p.label(), time.Duration(-x[planGapFirst]*float64(time.Hour)).Round(time.Minute), time.Duration(rule.Hold*float64(time.Hour)).Round(time.Minute), note)
		return d, nil
	}
	if !submit && rule.Floor != nil {
		fd, err := rule.Floor.Decide(obs)
		if err != nil {
			return provisioner.Decision{}, fmt.Errorf("policy %s floor: %w", p.PolicyName, err)
		}
		if fd.Action == provisioner.SubmitNow {
			fd.Score, fd.Reason = score, fmt.Sprintf("%s: floor: %s%s", p.label(), fd.Reason, note)
			return fd, nil
		}
	}
	if submit {
		d.Action = provisioner.SubmitNow
	}
	verb, cmp := "wait", "<"
	if submit {
		verb, cmp = "submit", "≥"
	}
	switch task {
	case Preference:
		d.Reason = fmt.Sprintf("%s: preference for submitting %.3f %s %.3f: %s", p.label(), score, cmp, th, verb)
	case Classification:
		d.Reason = fmt.Sprintf("%s: P(safe)=%.2f %s %.2f: %s", p.label(), score, cmp, th, verb)
	default:
		gap := time.Duration(score * float64(time.Second)).Round(time.Minute)
		thd := time.Duration(th * float64(time.Second)).Round(time.Minute)
		d.Reason = fmt.Sprintf("%s: predicted gap %s %s %s: %s", p.label(), gap, cmp, thd, verb)
	}
	d.Reason += note
	return d, nil
}

// signedDur renders seconds as a signed duration rounded to the minute.
func signedDur(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Minute)
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}

// FeatureDigest is a short stable digest of a feature vector (schema
// version included), for provisioner.DecisionRecord.Features.
func FeatureDigest(v []float64) string {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(features.FeatureSchemaVersion))
	h.Write(b[:])
	for _, x := range v {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return fmt.Sprintf("v%d:%s", features.FeatureSchemaVersion, hex.EncodeToString(h.Sum(nil)[:8]))
}
