package chainops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// ChainStore is a store that groups writes and keeps events: what the
// chain operations outside the daemon cycle (CancelChain, RecoverChains)
// write through.
type ChainStore interface {
	provisioner.Store
	provisioner.TxStore
	provisioner.EventStore
}

// CancelResult is what CancelChain did.
type CancelResult struct {
	Chain     provisioner.Chain     // the chain, marked cancelled unless it had already ended
	Cancelled []provisioner.Segment // the jobs cancelled, in order
	Ended     []provisioner.Segment // jobs that had ended on their own since the last daemon cycle, recorded with their real end state
	// Marked is the job that now carries provisioner.EndMark, for a chain
	// cancelled between segments (nothing to cancel); MarkErr why it could
	// not be marked (the chain is cancelled all the same).
	Marked  string
	MarkErr error
}

// EndMarker is a backend that can add a word to the comment of a job of
// the user's that has ended, in its history (Slurm: sacctmgr modify job).
type EndMarker interface {
	MarkEnded(ctx context.Context, jobID string, submitted time.Time, mark string) error
}

// CancelChain stops chain c (read from st by the caller, under the daemon
// lock):
//
//  1. an active chain is marked cancelled first, so no daemon cycle
//     submits for it again;
//  2. its unfinished jobs are cancelled: those the store knows, and any
//     live job carrying the chain's tag that it does not (the job of a
//     submission whose outcome was never recorded). cluster is asked for
//     the backend only when there is such a job to look for. A job the
//     store still holds as unfinished but that the backend (its live view,
//     else its history when it is a HistorySource) shows ended — a segment
//     that completed and handed off since the last daemon cycle — is not
//     cancelled: its real end state is recorded, as the daemon would.
//
// A chain cancelled between segments (no job of it unfinished) leaves no
// trace of it in the backend: its last job is marked there with
// provisioner.EndMark, where the backend is an EndMarker, so that recover
// does not offer it as recoverable after the state database is lost.
//
// A live job of another user carrying the chain's tag is left alone
// (anyone can copy a tag; Owns). done is called after each job is
// cancelled and recorded. A job already
// gone counts as cancelled; the others that fail are recorded as errors
// and reported together at the end, so running it again retries them.
func CancelChain(ctx context.Context, st ChainStore, c *provisioner.Chain, cluster func() (provisioner.Cluster, error), now time.Time, done func(provisioner.Segment)) (*CancelResult, error) {
	res := &CancelResult{}
	// 1. mark the chain cancelled (a daemon cycle never acts on it again).
	if c.State == provisioner.ChainActive {
		c.State, c.Reason = provisioner.ChainCancelled, "cancelled by the user"
		err := st.InTx(ctx, func(tx provisioner.Store) error {
			if err := tx.PutChain(ctx, c); err != nil {
				return err
			}
			if err := tx.Record(ctx, &provisioner.DecisionRecord{Time: now, ChainID: c.ID, Segment: -1, Policy: c.Policy, Action: provisioner.ActCancel, Reason: "mirage cancel: chain cancelled by the user"}); err != nil {
				return err
			}
			return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: -1, Kind: provisioner.EventChainEnded, Detail: "cancelled: cancelled by the user"})
		})
		if err != nil {
			return nil, err
		}
	}
	res.Chain = *c
	// 2. cancel its unfinished jobs: those the database knows, and any live
	// job carrying the chain's tag (the job of a submission whose outcome
	// was never recorded).
	segs, err := st.Segments(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	var todo []provisioner.Segment
	unresolved := false
	for _, s := range segs {
		if s.JobID != "" && !s.State.Finished() {
			todo = append(todo, s)
		}
		unresolved = unresolved || s.State == provisioner.StateSubmitting && s.JobID == ""
	}
	if len(todo) == 0 && !unresolved {
		res.Marked, res.MarkErr = markLast(ctx, st, c, cluster)
		return res, nil
	}
	cl, err := cluster()
	if err != nil {
		return nil, fmt.Errorf("chain %s is marked %s, but its jobs could not be cancelled (run mirage cancel again): %w", c.ID, c.State, err)
	}
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("chain %s is marked %s, but its jobs could not be listed (run mirage cancel again): %w", c.ID, c.State, err)
	}
	known := map[string]bool{}
	for _, s := range todo {
		known[s.JobID] = true
	}
	for _, j := range snap.Jobs {
		tag, ok := provisioner.ParseTag(j.Comment)
		if !ok || tag.Chain != c.ID || known[j.ID] || j.State.Finished() || !provisioner.Owns(cl, &j) {
			continue // another user's job carrying the tag is not ours to cancel
		}
		known[j.ID] = true
		todo = append(todo, provisioner.Segment{ChainID: c.ID, Index: tag.Segment, Attempt: tag.Attempt, JobID: j.ID, State: j.State,
			Submit: j.Submit, Start: j.Start})
	}
	live := map[string]*provisioner.Job{}
	for i := range snap.Jobs {
		live[snap.Jobs[i].ID] = &snap.Jobs[i]
	}
	ended, err := endedJobs(ctx, cl, live, todo)
	if err != nil {
		return nil, fmt.Errorf("chain %s is marked %s, but its jobs' end states could not be read (run mirage cancel again): %w", c.ID, c.State, err)
	}
	var failed []error
	for _, s := range todo {
		if j := ended[s.JobID]; j != nil {
			s.State, s.ExitCode = j.State, j.ExitCode
			s.Start, s.End = cmp.Or(j.Start, s.Start), cmp.Or(j.End, now)
			detail := fmt.Sprintf("%s exit %d at %s (seen by mirage cancel)", s.State, s.ExitCode, s.End.UTC().Format(time.RFC3339))
			err := st.InTx(ctx, func(tx provisioner.Store) error {
				if err := tx.PutSegment(ctx, &s); err != nil {
					return err
				}
				return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: s.Index, Attempt: s.Attempt, JobID: s.JobID, Kind: provisioner.EventEnded, Detail: detail})
			})
			if err != nil {
				return nil, err
			}
			res.Ended = append(res.Ended, s)
			continue
		}
		if err := cl.Cancel(ctx, s.JobID); err != nil && !errors.Is(err, provisioner.ErrNotFound) {
			failed = append(failed, fmt.Errorf("job %s: %w", s.JobID, err))
			_ = st.AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: s.Index, Attempt: s.Attempt, JobID: s.JobID, Kind: provisioner.EventError, Detail: "cancel: " + err.Error()})
			continue
		}
		s.State, s.End, s.Note = provisioner.StateCancelled, now, "cancelled by mirage cancel"
		err := st.InTx(ctx, func(tx provisioner.Store) error {
			if err := tx.PutSegment(ctx, &s); err != nil {
				return err
			}
			return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: s.Index, Attempt: s.Attempt, JobID: s.JobID, Kind: provisioner.EventCancelled, Detail: "mirage cancel"})
		})
		if err != nil {
			return nil, err
		}
		res.Cancelled = append(res.Cancelled, s)
		if done != nil {
			done(s)
		}
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("chain %s is marked %s, but %d job(s) could not be cancelled (run mirage cancel again): %w", c.ID, c.State, len(failed), errors.Join(failed...))
	}
	res.Marked, res.MarkErr = markLast(ctx, st, c, func() (provisioner.Cluster, error) { return cl, nil })
	return res, nil
}

// markLast marks the last submitted job of the cancelled chain c with
// provisioner.EndMark when that job ended by itself (a cancelled one says
// enough); it returns the job marked, or why none could be.
func markLast(ctx context.Context, st ChainStore, c *provisioner.Chain, cluster func() (provisioner.Cluster, error)) (string, error) {
	if c.State != provisioner.ChainCancelled {
		return "", nil
	}
	segs, err := st.Segments(ctx, c.ID)
	if err != nil {
		return "", err
	}
	var last *provisioner.Segment
	for i := range segs {
		s := &segs[i]
		if s.JobID != "" && (last == nil || s.Index > last.Index || s.Index == last.Index && s.Attempt > last.Attempt) {
			last = s
		}
	}
	if last == nil || !last.State.Finished() || last.State == provisioner.StateCancelled {
		return "", nil // nothing submitted, or its last job says it
	}
	cl, err := cluster()
	if err != nil {
		return "", err
	}
	m, ok := cl.(EndMarker)
	if !ok {
		return "", nil // the backend keeps no history to mark (Kubernetes)
	}
	if err := m.MarkEnded(ctx, last.JobID, last.Submit, provisioner.EndMark); err != nil {
		return "", fmt.Errorf("job %s: %w", last.JobID, err)
	}
	return last.JobID, nil
}

// endedJobs are the jobs of todo that have ended, by id: as the live view
// shows them, else, for the jobs it no longer lists, as the history shows
// them (when cl keeps one). A job found in neither is taken as live and
// cancelled (scancel of a job already gone is harmless).
func endedJobs(ctx context.Context, cl provisioner.Cluster, live map[string]*provisioner.Job, todo []provisioner.Segment) (map[string]*provisioner.Job, error) {
	ended := map[string]*provisioner.Job{}
	var since time.Time
	missing := false
	for _, s := range todo {
		j, ok := live[s.JobID]
		switch {
		case ok && j.State.Finished():
			ended[s.JobID] = j
		case !ok:
			missing = true
			if since.IsZero() || s.Submit.Before(since) {
				since = s.Submit
			}
		}
	}
	hs, ok := cl.(provisioner.HistorySource)
	if !missing || !ok {
		return ended, nil
	}
	hist, err := hs.History(ctx, since.Add(-time.Hour))
	if err != nil {
		return nil, err
	}
	for i := range hist {
		j := &hist[i]
		if _, isLive := live[j.ID]; !isLive && j.State.Finished() {
			ended[j.ID] = j
		}
	}
	return ended, nil
}
