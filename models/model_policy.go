package models

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// DefaultMaxOverlap is how much overlap a regression policy accepts when it
// submits: the published design submits when the predicted gap says overlap
// ≤ 30 minutes (the same boundary as SafeGapThreshold).
const DefaultMaxOverlap = 30 * time.Minute

// ModelPolicy turns a trained Model into a provisioner.Policy: features from
// the observation, one prediction, one decision.
//
//   - Regression models predict the signed gap (seconds) if the successor is
//     submitted now; the policy submits when the gap ≥ −MaxOverlap.
//   - Classification models predict P(gap ≥ SafeGapThreshold); the policy
//     submits when that probability ≥ MinProb.
//   - Preference models (dqn, pg) score submit over wait; the policy submits
//     when the score ≥ 0 (the greedy action).
//
// Without a running predecessor there is nothing to wait for: a finished or
// absent predecessor gives SubmitNow, a pending one gives Wait (the
// successor would only queue behind it). Decide keeps no state.
type ModelPolicy struct {
	PolicyName string        // registry name, e.g. "xgb"
	Model      Model         // trained on Schema()
	MaxOverlap time.Duration // regression: accepted overlap (default DefaultMaxOverlap)
	MinProb    float64       // classification: minimum P(safe) (default 0.5)
}

// NewModelPolicy wraps m, refusing a model trained on another feature schema.
func NewModelPolicy(name string, m Model) (*ModelPolicy, error) {
	if err := CheckSchema(m.Meta().Schema, Schema()); err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	return &ModelPolicy{PolicyName: name, Model: m, MaxOverlap: DefaultMaxOverlap, MinProb: 0.5}, nil
}

// Name implements provisioner.Policy.
func (p *ModelPolicy) Name() string { return p.PolicyName }

// Reasons recorded in the decision log when no model is consulted.
const (
	ReasonNoPredecessor      = "no running predecessor: submit"  // predecessor absent or finished
	ReasonPredecessorPending = "predecessor still pending: wait" // predecessor not started yet
)

// Decide implements provisioner.Policy.
func (p *ModelPolicy) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	pred := obs.Predecessor
	switch {
	case pred == nil || pred.State.Finished():
		return provisioner.Decision{Action: provisioner.SubmitNow, Reason: ReasonNoPredecessor}, nil
	case pred.State == provisioner.StatePending:
		return provisioner.Decision{Action: provisioner.Wait, Reason: ReasonPredecessorPending}, nil
	}
	var buf [128]float64
	x, err := AppendFeatures(buf[:0], obs)
	if err != nil {
		return provisioner.Decision{}, fmt.Errorf("policy %s: %w", p.PolicyName, err)
	}
	y, err := p.Model.Predict(x)
	if err != nil {
		return provisioner.Decision{}, fmt.Errorf("policy %s: %w", p.PolicyName, err)
	}
	d := provisioner.Decision{Action: provisioner.Wait, Score: y}
	if p.Model.Meta().Task == Preference {
		if y >= 0 {
			d.Action = provisioner.SubmitNow
			d.Reason = fmt.Sprintf("%s: preference for submitting %.3f ≥ 0: submit", p.PolicyName, y)
		} else {
			d.Reason = fmt.Sprintf("%s: preference for submitting %.3f < 0: wait", p.PolicyName, y)
		}
		return d, nil
	}
	if p.Model.Meta().Task == Classification {
		minP := p.MinProb
		if minP == 0 {
			minP = 0.5
		}
		if y >= minP {
			d.Action = provisioner.SubmitNow
			d.Reason = fmt.Sprintf("%s: P(safe)=%.2f ≥ %.2f: submit", p.PolicyName, y, minP)
		} else {
			d.Reason = fmt.Sprintf("%s: P(safe)=%.2f < %.2f: wait", p.PolicyName, y, minP)
		}
		return d, nil
	}
	maxOv := p.MaxOverlap
	if maxOv == 0 {
		maxOv = DefaultMaxOverlap
	}
	gap := time.Duration(y * float64(time.Second)).Round(time.Minute)
	if y >= -maxOv.Seconds() {
		d.Action = provisioner.SubmitNow
		d.Reason = fmt.Sprintf("%s: predicted gap %s ≥ −%s: submit", p.PolicyName, gap, maxOv)
	} else {
		d.Reason = fmt.Sprintf("%s: predicted gap %s < −%s: wait", p.PolicyName, gap, maxOv)
	}
	return d, nil
}

// FeatureDigest is a short stable digest of a feature vector (schema
// version included), for provisioner.DecisionRecord.Features.
func FeatureDigest(v []float64) string {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(FeatureSchemaVersion))
	h.Write(b[:])
	for _, x := range v {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return fmt.Sprintf("v%d:%s", FeatureSchemaVersion, hex.EncodeToString(h.Sum(nil)[:8]))
}
