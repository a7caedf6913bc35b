package chainops

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// RegisterChain stores c, active and created now, under a fresh id drawn
// from seed (ids are dated by now; a taken id draws again), with its
// registration event. The caller holds the daemon lock, so no cycle decides
// on a chain halfway registered.
func RegisterChain(ctx context.Context, st ChainStore, c *provisioner.Chain, now time.Time, seed uint64) error {
	src := rand.NewPCG(seed, 0x6d69726167652d63)
	for {
		c.ID = provisioner.NewChainID(now, src)
		if _, err := st.Chain(ctx, c.ID); errors.Is(err, provisioner.ErrChainNotFound) {
			break
		} else if err != nil {
			return err
		}
	}
	c.State, c.Created = provisioner.ChainActive, now
	return st.InTx(ctx, func(tx provisioner.Store) error {
		if err := tx.PutChain(ctx, c); err != nil {
			return err
		}
		script := c.Script
		if c.ScriptHash != "" {
			script += " (" + c.ScriptHash + ")"
		}
		return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: -1, Kind: provisioner.EventRegistered,
			Detail: fmt.Sprintf("script %s, %s, policy %s, max retries %d, id seed %d", script, provisioner.SegmentsText(c.Segments), c.Policy, c.MaxRetries, seed)})
	})
}

// SameActive is the active chain registered for the same work as c — the
// same script, sbatch options and working directory — or nil: what makes
// a re-run of the same mirage submit (after it exited 4 while the
// controller was down, say) answer with the chain it already made.
func SameActive(ctx context.Context, st provisioner.Store, c *provisioner.Chain) (*provisioner.Chain, error) {
	cs, err := st.Chains(ctx, true)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		o := &cs[i]
		if o.State == provisioner.ChainActive && o.Script == c.Script && o.WorkDir == c.WorkDir && slices.Equal(o.Args, c.Args) {
			return o, nil
		}
	}
	return nil, nil
}

// First is the outcome of a chain's first submission.
type First struct {
	Status string // submitted, deferred, failed, or existing (SameActive found the chain: nothing submitted)
	JobID  string // when submitted
	Reason string // why deferred or failed
	// Refused is set when the team rules refused the request itself
	// (unknown team, a job larger than any node): bad input, not a deferral.
	Refused bool
	Err     error // the submission's error (failed)
}

// ErrRefused marks a first segment the team rules refused as a request
// (First.Refused): bad input, not a deferral.
var ErrRefused = errors.New("refused by the team rules")

// Problem is what went wrong with the first segment of chain id, as an
// error that says what happened to the chain and what to do: wrapping
// ErrRefused, ErrRejected (the backend said no) or the submission's own
// error (its outcome unknown: the daemon sorts it out); nil when nothing did.
func (f First) Problem(id string) error {
	switch err := f.Err; {
	case f.Refused:
		return fmt.Errorf("chain %s: %w: %w (chain marked failed; fix the script, options or rules and submit again)", id, ErrRefused, err)
	case errors.Is(err, provisioner.ErrRejected):
		return fmt.Errorf("chain %s: the backend rejected the first segment (chain marked failed; fix the script or options and submit again): %w", id, err)
	case err != nil:
		return fmt.Errorf("chain %s registered, but the submission of its first segment failed or its answer was lost (mirage daemon adopts the job if Slurm has it, else submits it again after --submit-grace): %w", id, err)
	}
	return nil
}

// SubmitFirst submits the first segment of a chain RegisterChain has just
// stored, through the engine (the same path as the daemon's). A chain that
// cannot run — its request refused by the rules, or its first segment
// rejected by the backend (ErrRejected) — is marked failed with the reason.
func SubmitFirst(ctx context.Context, e *provisioner.Engine, st interface {
	provisioner.Store
	provisioner.DecisionLog
}, c *provisioner.Chain) (First, error) {
	rep, err := e.CycleChains(ctx, []string{c.ID})
	var res First
	switch {
	case err != nil:
		res.Status, res.Reason, res.Err = "failed", err.Error(), err
	case len(rep.Submissions) == 0:
		d := lastDecision(ctx, st, c.ID)
		if d != nil && d.Action == provisioner.ActError {
			res.Status, res.Reason, res.Refused, res.Err = "failed", d.Error, true, errors.New(d.Error)
			c.State, c.Reason = provisioner.ChainFailed, "the first segment cannot be submitted: "+d.Error
			if perr := st.PutChain(ctx, c); perr != nil {
				return res, perr
			}
			return res, nil
		}
		res.Status = "deferred"
		if d != nil {
			res.Reason = d.Reason
		}
	case rep.Submissions[0].Err != nil:
		res.Status, res.Reason, res.Err = "failed", rep.Submissions[0].Err.Error(), rep.Submissions[0].Err
	default:
		res.Status, res.JobID = "submitted", rep.Submissions[0].JobID
	}
	if errors.Is(res.Err, provisioner.ErrRejected) {
		// The first segment's options are wrong: the chain cannot run.
		c.State, c.Reason = provisioner.ChainFailed, "the backend rejected the first segment: "+res.Err.Error()
		if perr := st.PutChain(ctx, c); perr != nil {
			return res, perr
		}
	}
	return res, nil
}

// lastDecision is a chain's last decision, or nil.
func lastDecision(ctx context.Context, st provisioner.DecisionLog, id string) *provisioner.DecisionRecord {
	ds, err := st.Decisions(ctx, id)
	if err != nil || len(ds) == 0 {
		return nil
	}
	return &ds[len(ds)-1]
}
