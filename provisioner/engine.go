package provisioner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fault-injection points of Engine.Fault (tests kill the process there).
const (
	FaultAfterSnapshot    = "after-snapshot"    // the cluster and its history are read; nothing decided
	FaultAfterBookkeeping = "after-bookkeeping" // reconciliation committed, nothing submitted yet
	FaultBeforeSubmit     = "before-submit"     // the intent is committed; about to call Cluster.Submit
	FaultAfterSubmit      = "after-submit"      // the backend has the job; the store does not know it yet
	FaultAfterCommit      = "after-commit"      // the submitted segment is committed
	FaultBeforeReclaim    = "before-reclaim"    // a reclaim is planned; no victim signalled yet
	FaultAfterReclaim     = "after-reclaim"     // the cycle's reclaims are done; nothing recorded or submitted yet
)

// Engine is the thin apply layer around Step: it reads the stored chains,
// one snapshot and the history, runs the pure step, then performs the
// plan — bookkeeping in one transaction, cancels, and each submission
// between two commits: the intent (the segment as SUBMITTING) before the
// backend is asked, the outcome (job id, or rejection) right after — so
// that a crash at any instant leaves either a SUBMITTING segment, which
// the next cycle resolves by adopting the tagged job or, after
// SubmitGrace, by taking it as not submitted, or the recorded job. Every
// decision, action and error is recorded in the Store.
type Engine struct {
	Cluster Cluster // the backend (HistorySource too, where it has one)
	Store   Store   // durable chain state
	Clock   Clock   // decision time
	// Policies resolves each active chain's policy before the step, once
	// per key and cycle (it may load model files); nil: BaselinePolicy.
	Policies PolicyResolver
	Rules    Rules // team rules; nil: admit everything
	// Self is the user whose jobs the chains are (StepInput.Self); "" skips
	// the owner check (the simulator).
	Self string
	// TagKey signs the comments of the jobs it submits and verifies those
	// of tagged jobs before adopting them (StepInput.TagKey); nil: no MACs.
	TagKey *TagKey
	// HandOffs, when set, gives the realised hand-offs (sorted by Known)
	// instead of those of the store's chains: a replay that plays chains
	// side by side, each in its own store, feeds an online policy the
	// outcomes of the others with it.
	HandOffs      func(ctx context.Context) ([]HandOff, error)
	HistoryWindow time.Duration      // default DefaultHistoryWindow
	SubmitGrace   time.Duration      // how long an unrecorded submission holds its chain; default DefaultSubmitGrace
	Fault         func(point string) // test-only fault injection, called at the Fault* points; nil in production
	Log           *slog.Logger       // nil: slog.Default()
}

// Submission is the outcome of one planned submission.
type Submission struct {
	ChainID string // chain
	Segment int    // segment index
	Attempt int    // attempt
	JobID   string // job id, when submitted
	Err     error  // why not, when not
}

// Report summarises one cycle.
type Report struct {
	Time        time.Time    // decision time
	Chains      int          // active chains decided on
	Adopted     int          // tagged jobs adopted
	Updated     int          // segments stored (adoptions, state changes, cancels, rejections)
	Ended       int          // chains ended
	Waits       int          // wait decisions
	Errors      int          // decisions or actions that failed
	Cancelled   int          // superseded successors cancelled
	Reclaimed   int          // reclaims performed (each stops one or more borrowed jobs)
	Submissions []Submission // planned submissions and their outcomes
	HistoryOK   bool         // the history was read
}

// Submitted counts successful submissions.
func (r *Report) Submitted() int {
	n := 0
	for _, s := range r.Submissions {
		if s.Err == nil {
			n++
		}
	}
	return n
}

// Rejected counts submissions the backend refused.
func (r *Report) Rejected() int {
	n := 0
	for _, s := range r.Submissions {
		if errors.Is(s.Err, ErrRejected) {
			n++
		}
	}
	return n
}

func (e *Engine) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

func (e *Engine) fault(point string) {
	if e.Fault != nil {
		e.Fault(point)
	}
}

// Cycle runs one decision cycle over every active chain.
func (e *Engine) Cycle(ctx context.Context) (*Report, error) { return e.cycle(ctx, nil) }

// CycleChains runs one decision cycle over the given chains only (as
// `mirage submit` does for the chain it registers).
func (e *Engine) CycleChains(ctx context.Context, ids []string) (*Report, error) {
	if ids == nil {
		ids = []string{}
	}
	return e.cycle(ctx, ids)
}

func (e *Engine) cycle(ctx context.Context, ids []string) (*Report, error) {
	// 1. decision time and stored state
	now := e.Clock.Now()
	rep := &Report{Time: now}
	records, err := e.load(ctx, ids)
	if err != nil {
		return rep, err
	}
	active := 0
	for i := range records {
		if records[i].Chain.State == ChainActive {
			active++
		}
	}
	rep.Chains = active
	if active == 0 {
		return rep, nil // nothing to do: not even a snapshot
	}
	// 2. one snapshot of the cluster
	snap, err := e.Cluster.Snapshot(ctx)
	if err != nil {
		e.addEvent(ctx, &Event{Time: now, Segment: -1, Kind: EventError, Detail: "cluster snapshot: " + err.Error()})
		return rep, fmt.Errorf("cluster snapshot: %w", err)
	}
	// 3. history for policies and for segments that ended between cycles
	var history []Job
	if hs, ok := e.Cluster.(HistorySource); ok {
		since := e.historySince(now, records)
		history, err = hs.History(ctx, since)
		switch {
		case err == nil:
			rep.HistoryOK = true
		case errors.Is(err, ErrNoAccounting):
			e.log().Warn("history unavailable; deciding from the live view only", "err", err)
		case errors.Is(err, ErrIncomplete):
			// What it shows is used; what it lacks proves nothing.
			e.addEvent(ctx, &Event{Time: now, Segment: -1, Kind: EventError, Detail: "history incomplete (no job is taken as lost this cycle): " + err.Error()})
			e.log().Warn("history incomplete: no job is taken as lost this cycle", "err", err)
		default:
			e.addEvent(ctx, &Event{Time: now, Segment: -1, Kind: EventError, Detail: "history: " + err.Error()})
			e.log().Warn("history failed; deciding from the live view only", "err", err)
		}
	}
	if err := e.takeDone(ctx, records); err != nil {
		return rep, err
	}
	handOffs, err := e.handOffs(ctx, records)
	if err != nil {
		return rep, err
	}
	e.fault(FaultAfterSnapshot)
	// 4. the pure step
	var keeper string
	if e.TagKey != nil {
		keeper = e.TagKey.Keeper
	}
	plan := Step(&StepInput{Now: now, Snapshot: snap, History: history, HistoryOK: rep.HistoryOK, Chains: records, HandOffs: handOffs, Policies: ResolvePolicies(records, e.Policies), Rules: e.Rules,
		SubmitGrace: e.SubmitGrace, Self: e.Self, TagKey: e.TagKey, Keeper: keeper, Cluster: ClusterNameOf(e.Cluster)})
	if plan.Halt != "" {
		e.addEvent(ctx, &Event{Time: now, Segment: -1, Kind: EventError, Detail: "nothing done: " + plan.Halt})
		e.log().Error("nothing done this cycle: the cluster's view is implausible", "why", plan.Halt)
		return rep, fmt.Errorf("%w: %s", ErrImplausibleView, plan.Halt)
	}
	plan.Ops = e.dropSeenForeign(ctx, plan.Ops)
	// 5. bookkeeping in one transaction
	var book, tail []Op
	for _, op := range plan.Ops {
		if op.Kind == OpSubmit || op.Kind == OpCancel || op.Kind == OpCancelDup || op.Kind == OpUnpin || op.Kind == OpReclaim {
			tail = append(tail, op)
		} else {
			book = append(book, op)
			rep.count(&op)
		}
	}
	if err := e.inTx(ctx, func(s Store) error { return applyOps(ctx, s, book) }); err != nil {
		return rep, fmt.Errorf("record decisions: %w", err)
	}
	e.fault(FaultAfterBookkeeping)
	// 6. cancels, reclaims and submissions, each committed at once
	var firstErr error
	unavailable := false
	reclaims := e.executeReclaims(ctx, tail)
	reclaimFailed := map[string]bool{} // chains whose reclaim failed: their submission is not made
	for i := range tail {
		op := &tail[i]
		var err error
		switch op.Kind {
		case OpCancel:
			err = e.cancel(ctx, now, op, rep)
		case OpCancelDup:
			err = e.cancelDup(ctx, now, op, rep)
		case OpUnpin:
			err = e.unpin(ctx, op, rep)
		case OpReclaim:
			var ok bool
			ok, err = e.recordReclaim(ctx, now, op, reclaims[i], rep)
			reclaimFailed[op.Record.ChainID] = !ok
		case OpSubmit:
			if reclaimFailed[op.Segment.ChainID] {
				op.Record.Action = Wait
				op.Record.Reason += "; not submitted: the reclaim that was to make room failed (decided again next cycle)"
				err = e.inTx(ctx, func(s Store) error { return s.Record(ctx, op.Record) })
				break
			}
			if unavailable {
				op.Record.Action, op.Record.Error = ActError, "not attempted: the backend was unavailable for an earlier submission in this cycle"
				rep.Submissions = append(rep.Submissions, Submission{ChainID: op.Segment.ChainID, Segment: op.Segment.Index, Attempt: op.Segment.Attempt, Err: ErrUnavailable})
				rep.Errors++
				err = e.inTx(ctx, func(s Store) error { return s.Record(ctx, op.Record) })
				break
			}
			var sub Submission
			sub, err = e.submit(ctx, now, op)
			rep.Submissions = append(rep.Submissions, sub)
			if sub.Err != nil {
				rep.Errors++
				if errors.Is(sub.Err, ErrRejected) {
					rep.Updated++
				}
				if errors.Is(sub.Err, ErrUnavailable) {
					unavailable = true
				}
			}
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return rep, firstErr
}

func (r *Report) count(op *Op) {
	switch op.Kind {
	case OpPutSegment:
		r.Updated++
	case OpPutChain:
		r.Ended++
	case OpRecord:
		switch op.Record.Action {
		case Wait:
			r.Waits++
		case ActAdopt:
			r.Adopted++
		case ActError:
			r.Errors++
		}
	}
}

// load reads the chains to decide on and their segments.
func (e *Engine) load(ctx context.Context, ids []string) ([]ChainRecord, error) {
	var chains []Chain
	if ids == nil {
		cs, err := e.Store.Chains(ctx, true)
		if err != nil {
			return nil, fmt.Errorf("read chains: %w", err)
		}
		chains = cs
	} else {
		for _, id := range ids {
			c, err := e.Store.Chain(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("read chain %s: %w", id, err)
			}
			chains = append(chains, *c)
		}
	}
	out := make([]ChainRecord, 0, len(chains))
	for _, c := range chains {
		segs, err := e.Store.Segments(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("read segments of chain %s: %w", c.ID, err)
		}
		out = append(out, ChainRecord{Chain: c, Segments: segs})
	}
	return out, nil
}

// historySince is the start of the history window: the policies' window,
// or earlier when an unfinished segment (or a job submitted after the last
// stored one, before a crash) may have ended before it.
func (e *Engine) historySince(now time.Time, records []ChainRecord) time.Time {
	w := e.HistoryWindow
	if w <= 0 {
		w = DefaultHistoryWindow
	}
	since := now.Add(-w)
	earlier := func(t time.Time) {
		if !t.IsZero() && t.Add(-time.Minute).Before(since) {
			since = t.Add(-time.Minute)
		}
	}
	for i := range records {
		r := &records[i]
		if r.Chain.State != ChainActive {
			continue
		}
		if len(r.Segments) == 0 {
			earlier(r.Chain.Created)
			continue
		}
		latest := r.Segments[0].Submit
		for _, s := range r.Segments {
			if s.Submit.After(latest) {
				latest = s.Submit
			}
			if !s.State.Finished() {
				earlier(s.Submit)
			}
		}
		earlier(latest)
	}
	return since
}

// takeDone has a DoneSource store take in the `mirage done` markers, after
// the snapshot and history (a job they show ended wrote its marker before
// it ended, so no marker of it is missed), and reloads the segments of the
// chains it marked into records.
func (e *Engine) takeDone(ctx context.Context, records []ChainRecord) error {
	ds, ok := e.Store.(DoneSource)
	if !ok {
		return nil
	}
	marked, problems, err := ds.IngestDone(ctx)
	for _, p := range problems {
		e.log().Warn("a done marker could not be read: left in place", "err", p)
	}
	if err != nil {
		return fmt.Errorf("done markers: %w", err)
	}
	for i := range records {
		if r := &records[i]; slices.Contains(marked, r.Chain.ID) {
			if r.Segments, err = e.Store.Segments(ctx, r.Chain.ID); err != nil {
				return fmt.Errorf("read segments of chain %s: %w", r.Chain.ID, err)
			}
		}
	}
	return nil
}

func (e *Engine) inTx(ctx context.Context, fn func(Store) error) error {
	if tx, ok := e.Store.(TxStore); ok {
		return tx.InTx(ctx, fn)
	}
	return fn(e.Store)
}

func (e *Engine) addEvent(ctx context.Context, ev *Event) {
	if es, ok := e.Store.(EventStore); ok {
		if err := es.AddEvent(ctx, ev); err != nil {
			e.log().Error("record event", "kind", ev.Kind, "err", err)
		}
	}
}

// dropSeenForeign keeps an EventForeign op only the first time the store
// sees it (chain and job): another user's tagged job is reported once, with
// a warning, not at every cycle.
func (e *Engine) dropSeenForeign(ctx context.Context, ops []Op) []Op {
	es, _ := e.Store.(EventStore)
	seen := map[string]map[string]bool{} // chain → job ids already reported
	return slices.DeleteFunc(ops, func(op Op) bool {
		if op.Kind != OpEvent || op.Event.Kind != EventForeign {
			return false
		}
		ev := op.Event
		if seen[ev.ChainID] == nil {
			seen[ev.ChainID] = map[string]bool{}
			if es != nil {
				old, _ := es.Events(ctx, ev.ChainID)
				for _, o := range old {
					if o.Kind == EventForeign {
						seen[ev.ChainID][o.JobID] = true
					}
				}
			}
		}
		if seen[ev.ChainID][ev.JobID] {
			return true
		}
		seen[ev.ChainID][ev.JobID] = true
		e.log().Warn("another user's job carries a chain's tag: ignored", "chain", ev.ChainID, "job", ev.JobID, "detail", ev.Detail)
		return false
	})
}

// applyOps performs bookkeeping ops against s.
func applyOps(ctx context.Context, s Store, ops []Op) error {
	es, _ := s.(EventStore)
	for i := range ops {
		op := &ops[i]
		var err error
		switch op.Kind {
		case OpPutSegment:
			err = s.PutSegment(ctx, op.Segment)
		case OpPutChain:
			err = s.PutChain(ctx, op.Chain)
		case OpRecord:
			err = s.Record(ctx, op.Record)
		case OpEvent:
			if es != nil {
				err = es.AddEvent(ctx, op.Event)
			}
		default:
			err = fmt.Errorf("provisioner: op %q in bookkeeping", op.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// cancel cancels a successor made unnecessary and records it.
func (e *Engine) cancel(ctx context.Context, now time.Time, op *Op, rep *Report) error {
	seg := *op.Segment
	rec := *op.Record
	ops := []Op{}
	if err := e.Cluster.Cancel(ctx, seg.JobID); err != nil && !errors.Is(err, ErrNotFound) {
		rec.Action, rec.Error = ActError, fmt.Sprintf("cancel job %s: %v", seg.JobID, err)
		rep.Errors++
	} else {
		seg.State, seg.End, seg.Note = StateCancelled, now, "cancelled by mirage: the work had finished"
		ops = append(ops, Op{Kind: OpPutSegment, Segment: &seg},
			Op{Kind: OpEvent, Event: &Event{Time: now, ChainID: seg.ChainID, Segment: seg.Index, Attempt: seg.Attempt, JobID: seg.JobID, Kind: EventCancelled, Detail: rec.Reason}})
		rep.Cancelled++
		rep.Updated++
	}
	ops = append(ops, Op{Kind: OpRecord, Record: &rec})
	ctx = context.WithoutCancel(ctx)
	return e.inTx(ctx, func(s Store) error { return applyOps(ctx, s, ops) })
}

// cancelDup cancels a second job carrying a stored segment's tag and
// records it; the stored segment is left as it is.
func (e *Engine) cancelDup(ctx context.Context, now time.Time, op *Op, rep *Report) error {
	rec := *op.Record
	ev := &Event{Time: now, ChainID: rec.ChainID, Segment: rec.Segment, JobID: rec.JobID, Kind: EventDuplicate, Detail: rec.Reason}
	if err := e.Cluster.Cancel(ctx, rec.JobID); err != nil && !errors.Is(err, ErrNotFound) {
		rec.Action, rec.Error = ActError, fmt.Sprintf("cancel duplicate job %s: %v", rec.JobID, err)
		ev.Detail += " (cancel failed: " + err.Error() + ")"
		rep.Errors++
	} else {
		rep.Cancelled++
	}
	e.log().Warn("duplicate job carries a segment's tag", "chain", rec.ChainID, "segment", rec.Segment, "job", rec.JobID, "error", rec.Error)
	ops := []Op{{Kind: OpEvent, Event: ev}, {Kind: OpRecord, Record: &rec}}
	ctx = context.WithoutCancel(ctx)
	return e.inTx(ctx, func(s Store) error { return applyOps(ctx, s, ops) })
}

// reclaimOutcome is what ExecuteReclaim did for one OpReclaim.
type reclaimOutcome struct {
	notes []string
	err   error
}

// executeReclaims carries out every OpReclaim of the plan's tail at once
// (ExecuteReclaim each), so that a burst of requests waits one grace
// period, not one per reclaim; their victims are distinct (Step plans each
// reclaim without the victims of the ones before). The outcomes, by the
// op's index in tail, are recorded in order with the rest of the tail.
func (e *Engine) executeReclaims(ctx context.Context, tail []Op) map[int]reclaimOutcome {
	out := map[int]reclaimOutcome{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range tail {
		if tail[i].Kind != OpReclaim {
			continue
		}
		e.fault(FaultBeforeReclaim)
		wg.Add(1)
		go func() {
			defer wg.Done()
			notes, err := ExecuteReclaim(ctx, e.Cluster, tail[i].Reclaim)
			mu.Lock()
			out[i] = reclaimOutcome{notes, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(out) > 0 {
		e.fault(FaultAfterReclaim)
	}
	return out
}

// recordReclaim records what a reclaim did, ahead of its chain's
// submission: one event per victim stopped and the decision, with the
// error when it failed. ok is false when the submission must not be made
// (some victim may still hold the room).
func (e *Engine) recordReclaim(ctx context.Context, now time.Time, op *Op, o reclaimOutcome, rep *Report) (ok bool, err error) {
	r, rec := op.Reclaim, *op.Record
	rep.Reclaimed++
	var ops []Op
	if len(o.notes) > 0 {
		rec.Reason += "; " + strings.Join(o.notes, "; ")
	}
	if o.err != nil {
		rec.Action, rec.Error = ActError, o.err.Error()
		rep.Errors++
		e.log().Warn("reclaim failed", "chain", rec.ChainID, "team", r.Team, "err", o.err)
	} else {
		for _, v := range r.Victims {
			ops = append(ops, Op{Kind: OpEvent, Event: &Event{Time: now, ChainID: rec.ChainID, Segment: rec.Segment, JobID: v.JobID, Kind: EventReclaimed, Detail: v.Reason}})
		}
		e.log().Info("reclaimed", "chain", rec.ChainID, "team", r.Team, "node", r.Node, "victims", len(r.Victims))
	}
	ops = append(ops, Op{Kind: OpRecord, Record: &rec})
	ctx = context.WithoutCancel(ctx)
	return o.err == nil, e.inTx(ctx, func(s Store) error { return applyOps(ctx, s, ops) })
}

// unpin lifts the node list of a pinned successor still pending after its
// predecessor ended (Unpinner), then stores the segment unpinned. When the
// backend fails, the segment stays pinned (the next cycle tries again); a
// backend that cannot lift node lists at all gets one error record and the
// segment is stored unpinned, so that it is not tried again: the job waits
// for its nodes.
func (e *Engine) unpin(ctx context.Context, op *Op, rep *Report) error {
	seg, rec := *op.Segment, *op.Record
	ops := []Op{{Kind: OpRecord, Record: &rec}}
	seg.Pinned = ""
	if u, ok := e.Cluster.(Unpinner); !ok {
		rec.Action, rec.Error = ActError, fmt.Sprintf("unpin job %s: the backend cannot lift a pending job's node list; it waits for its nodes", seg.JobID)
		rep.Errors++
	} else if err := u.Unpin(ctx, seg.JobID); err != nil && !errors.Is(err, ErrNotFound) {
		rec.Action, rec.Error = ActError, fmt.Sprintf("unpin job %s: %v (tried again next cycle)", seg.JobID, err)
		rep.Errors++
		seg.Pinned = op.Segment.Pinned
	}
	if seg.Pinned == "" {
		ops = append(ops, Op{Kind: OpPutSegment, Segment: &seg})
		rep.Updated++
	}
	ctx = context.WithoutCancel(ctx)
	return e.inTx(ctx, func(s Store) error { return applyOps(ctx, s, ops) })
}

// submit performs one submission between two commits: first the intent
// (the segment stored as SUBMITTING, without a job id), then the outcome —
// the job id, a rejection, a certain non-submission (ErrNotSubmitted:
// the intent is abandoned at once), or an unknown outcome (the intent
// stays; the next cycles adopt the tagged job or abandon the intent after
// SubmitGrace). A store failure after a successful submission is
// returned; the next cycle adopts the tagged job.
func (e *Engine) submit(ctx context.Context, now time.Time, op *Op) (Submission, error) {
	seg, rec := *op.Segment, *op.Record
	sub := Submission{ChainID: seg.ChainID, Segment: seg.Index, Attempt: seg.Attempt}
	cctx := context.WithoutCancel(ctx)
	intent := seg
	intent.JobID, intent.State, intent.Note = "", StateSubmitting, "submission started: the job id is recorded when the backend answers"
	if err := e.inTx(cctx, func(s Store) error { return s.PutSegment(cctx, &intent) }); err != nil {
		sub.Err = err
		return sub, fmt.Errorf("record the intent to submit chain %s segment %d (nothing submitted): %w", seg.ChainID, seg.Index, err)
	}
	e.fault(FaultBeforeSubmit)
	id, err := e.Cluster.Submit(ctx, *op.Request)
	var ops []Op
	switch {
	case err == nil:
		e.fault(FaultAfterSubmit)
		seg.JobID, rec.JobID, sub.JobID = id, id, id
		ops = []Op{{Kind: OpPutSegment, Segment: &seg}, {Kind: OpRecord, Record: &rec},
			{Kind: OpEvent, Event: &Event{Time: now, ChainID: seg.ChainID, Segment: seg.Index, Attempt: seg.Attempt, JobID: id, Kind: EventSubmitted, Detail: op.Request.Comment}}}
		e.log().Info("submitted", "chain", seg.ChainID, "segment", seg.Index, "attempt", seg.Attempt, "job", id, "action", rec.Action)
	case errors.Is(err, ErrRejected):
		sub.Err = err
		seg.State, seg.End, seg.Note = StateRejected, now, err.Error()
		rec.Error = err.Error()
		ops = []Op{{Kind: OpPutSegment, Segment: &seg}, {Kind: OpRecord, Record: &rec},
			{Kind: OpEvent, Event: &Event{Time: now, ChainID: seg.ChainID, Segment: seg.Index, Attempt: seg.Attempt, Kind: EventEnded, Detail: "REJECTED: " + err.Error()}}}
		e.log().Warn("submission rejected", "chain", seg.ChainID, "segment", seg.Index, "attempt", seg.Attempt, "err", err)
	case errors.Is(err, ErrNotSubmitted):
		sub.Err = err
		seg.State, seg.End, seg.Note = StateAbandoned, now, err.Error()
		rec.Error = err.Error()
		ops = []Op{{Kind: OpPutSegment, Segment: &seg}, {Kind: OpRecord, Record: &rec}}
		e.log().Info("submission not made", "chain", seg.ChainID, "segment", seg.Index, "attempt", seg.Attempt, "err", err)
	default:
		// Unknown outcome (timeout, controller down): the intent stays; if
		// the job exists after all, a later cycle adopts it by its tag.
		sub.Err = err
		rec.Error = err.Error() + " (outcome unknown: the segment waits for a job with its tag, or for the submission grace to pass)"
		ops = []Op{{Kind: OpRecord, Record: &rec}}
		e.log().Warn("submission failed", "chain", seg.ChainID, "segment", seg.Index, "attempt", seg.Attempt, "err", err)
	}
	if cerr := e.inTx(cctx, func(s Store) error { return applyOps(cctx, s, ops) }); cerr != nil {
		return sub, fmt.Errorf("commit submission of chain %s segment %d (job %s; it will be adopted next cycle): %w", seg.ChainID, seg.Index, id, cerr)
	}
	if err == nil {
		e.fault(FaultAfterCommit)
	}
	return sub, nil
}
