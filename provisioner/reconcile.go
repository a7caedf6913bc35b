package provisioner

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// jobIndex is the snapshot and the history, indexed once per step.
type jobIndex struct {
	byID    map[string]*Job        // every job, the most advanced report of it
	tagged  map[string][]taggedJob // chain id → its tagged jobs (self's)
	foreign map[string][]taggedJob // chain id → jobs of other users carrying its tag
}

type taggedJob struct {
	tag Tag
	job *Job
}

// indexJobs builds the index. A job reported both live and in the history
// is taken in its more advanced state (finished beats running beats pending),
// because the snapshot and the history are read at slightly different times.
// With self set, a tagged job of another user is indexed as foreign: anyone
// can copy a tag into a job's comment, and squeue shows every comment. With
// a key, so is a job of the user's whose comment the key does not verify
// (TagKey.Verified).
func indexJobs(snap *Snapshot, history []Job, self string, key *TagKey) *jobIndex {
	idx := &jobIndex{byID: make(map[string]*Job, len(snap.Jobs)+len(history)), tagged: map[string][]taggedJob{}, foreign: map[string][]taggedJob{}}
	add := func(j *Job) {
		if old, ok := idx.byID[j.ID]; ok && rank(old.State) >= rank(j.State) {
			return
		}
		idx.byID[j.ID] = j
	}
	for i := range snap.Jobs {
		add(&snap.Jobs[i])
	}
	for i := range history {
		add(&history[i])
	}
	for _, j := range idx.byID {
		if !strings.Contains(j.Comment, TagPrefix) {
			continue
		}
		t, ok := ParseTag(j.Comment)
		switch {
		case !ok:
		case self != "" && j.User != self, !key.Verified(self, j):
			idx.foreign[t.Chain] = append(idx.foreign[t.Chain], taggedJob{t, j})
		default:
			idx.tagged[t.Chain] = append(idx.tagged[t.Chain], taggedJob{t, j})
		}
	}
	for _, lst := range idx.foreign {
		slices.SortFunc(lst, func(a, b taggedJob) int { return compareJobIDs(a.job.ID, b.job.ID) })
	}
	for _, lst := range idx.tagged {
		slices.SortFunc(lst, func(a, b taggedJob) int {
			if c := cmp.Compare(a.tag.Segment, b.tag.Segment); c != 0 {
				return c
			}
			if c := cmp.Compare(a.tag.Attempt, b.tag.Attempt); c != 0 {
				return c
			}
			return compareJobIDs(a.job.ID, b.job.ID)
		})
	}
	return idx
}

// rank orders states by progress: unknown < pending < running < finished.
func rank(s JobState) int {
	switch s {
	case StateUnknown, "":
		return 0
	case StatePending:
		return 1
	case StateRunning:
		return 2
	}
	return 3
}

// compareJobIDs orders numeric ids numerically ("99" < "100"), others as strings.
func compareJobIDs(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(a, b)
}

// MaxLostShare is the largest share of the user's unfinished segments one
// step may take for lost at once: a view in which more of them (and at
// least two) are missing from both the live view and a complete history is
// taken as a wrong view of the cluster — another cluster's slurm.conf, an
// accounting database behind — not as that many jobs gone, and nothing is
// done (Plan.Halt). A single segment is never held back by it.
const MaxLostShare = 0.1

// implausibleLoss says why the view (idx, historyOK) is too implausible to
// act on, or "" when it is not: reconciling the active chains of records
// (but those refused) would mark more than MaxLostShare of their
// unfinished segments that have a job, and at least two of them, lost at
// once (every one of them, when there are two or more). Jobs the backend
// saw mirage reclaim (Snapshot.Reclaimed) are gone for a known reason: a
// burst of reclaims on Kubernetes deletes many borrowed pods at once, and
// they count neither as lost nor in the share.
func implausibleLoss(records []ChainRecord, refused map[string]string, reclaimed map[string]bool, idx *jobIndex, historyOK bool) string {
	if !historyOK {
		return "" // nothing is marked lost without a complete history
	}
	live := 0
	var lost []string
	for i := range records {
		r := &records[i]
		if _, no := refused[r.Chain.ID]; r.Chain.State != ChainActive || no {
			continue
		}
		for _, s := range r.Segments {
			if s.JobID == "" || s.State.Finished() || reclaimed[s.JobID] {
				continue
			}
			live++
			if idx.byID[s.JobID] == nil {
				lost = append(lost, s.JobID)
			}
		}
	}
	if len(lost) < 2 || float64(len(lost)) <= MaxLostShare*float64(live) {
		return ""
	}
	slices.SortFunc(lost, compareJobIDs)
	shown := strings.Join(lost[:min(len(lost), 10)], ", ")
	if len(lost) > 10 {
		shown += ", …"
	}
	return fmt.Sprintf("%d of the %d unfinished segments' jobs are in neither the live view nor the history (jobs %s): "+
		"a view that lost so many at once is taken as wrong — another cluster's slurm.conf (SLURM_CONF, --slurm-conf), an accounting database catching up — "+
		"not as jobs gone, and nothing is done until they show again (at most %.0f%% may be taken as lost at once)",
		len(lost), live, shown, 100*MaxLostShare)
}

// segKey identifies a segment attempt.
type segKey struct{ index, attempt int }

// chainWork is one chain's state during a step.
type chainWork struct {
	chain Chain
	segs  []Segment          // by (index, attempt)
	orig  map[segKey]Segment // segments as stored before this step
	ops   []Op               // bookkeeping ops decided so far
	tail  []Op               // cancels and submits, after the bookkeeping
	now   time.Time
	// abandoned holds the submission time of abandoned submissions (left
	// out of segs), so a new submission of one can say so.
	abandoned map[segKey]time.Time
}

func (w *chainWork) event(kind EventKind, s *Segment, detail string, value float64) {
	e := &Event{Time: w.now, ChainID: w.chain.ID, Segment: -1, Kind: kind, Detail: detail, Value: value}
	if s != nil {
		e.Segment, e.Attempt, e.JobID = s.Index, s.Attempt, s.JobID
	}
	w.ops = append(w.ops, Op{Kind: OpEvent, Event: e})
}

func (w *chainWork) record(d DecisionRecord) {
	d.Time, d.ChainID = w.now, w.chain.ID
	if d.Policy == "" {
		d.Policy = w.chain.Policy
	}
	w.ops = append(w.ops, Op{Kind: OpRecord, Record: &d})
}

func (w *chainWork) putSegment(s *Segment) {
	c := *s
	w.ops = append(w.ops, Op{Kind: OpPutSegment, Segment: &c})
}

func (w *chainWork) find(index, attempt int) int {
	for i := range w.segs {
		if w.segs[i].Index == index && w.segs[i].Attempt == attempt {
			return i
		}
	}
	return -1
}

// reconcile brings the stored segments in line with what the backend
// reports (step 1 of the per-chain decision):
//
//	1a. adopt tagged jobs the store does not know (a crash between sbatch
//	    and the commit), so they are never submitted twice: as new segments,
//	    or as the job of a submission whose outcome was not recorded
//	    (SUBMITTING); a second unfinished job carrying a stored segment's
//	    tag is cancelled;
//	1b. update pending and running segments from their jobs (started, ended);
//	1c. mark a segment lost when its job is reported nowhere although the
//	    history covers its lifetime;
//	1d. abandon a submission whose outcome was not recorded when no job
//	    carries its tag grace after it (and the history is complete); an
//	    abandoned submission is no attempt: it is left out of the decision,
//	    and the same segment and attempt may be submitted again;
//	1e. record the gap between each successor's start and its
//	    predecessor's end when it becomes known.
func (w *chainWork) reconcile(idx *jobIndex, historyOK bool, grace time.Duration) {
	// 1a'. another user's jobs carrying this chain's tag: reported, never acted on
	for _, tj := range idx.foreign[w.chain.ID] {
		w.ops = append(w.ops, Op{Kind: OpEvent, Event: &Event{Time: w.now, ChainID: w.chain.ID, Segment: tj.tag.Segment, Attempt: tj.tag.Attempt,
			JobID: tj.job.ID, Kind: EventForeign, Detail: ForeignDetail(tj.job, tj.tag)}})
	}
	// 1a. adoption
	for _, tj := range idx.tagged[w.chain.ID] {
		i := w.find(tj.tag.Segment, tj.tag.Attempt)
		switch {
		case i < 0:
			s := Segment{ChainID: w.chain.ID, Index: tj.tag.Segment, Attempt: tj.tag.Attempt, JobID: tj.job.ID,
				State: tj.job.State, Submit: tj.job.Submit, Start: tj.job.Start, End: tj.job.End, ExitCode: tj.job.ExitCode}
			w.segs = append(w.segs, s)
			sortSegments(w.segs)
			w.putSegment(&s)
			reason := fmt.Sprintf("found job %s tagged %s in the backend but not in the state database (a crash between submission and commit?): adopted instead of submitting again",
				tj.job.ID, Tag{w.chain.ID, s.Index, s.Attempt})
			w.event(EventAdopted, &s, reason, 0)
			w.record(DecisionRecord{Segment: s.Index, Action: ActAdopt, Reason: reason, JobID: s.JobID})
		case w.segs[i].JobID == "":
			// The job of a submission whose outcome was not recorded
			// (SUBMITTING), or that was given up too early (ABANDONED):
			// 1b fills in its state and times.
			s := &w.segs[i]
			reason := fmt.Sprintf("found job %s tagged %s for the submission made at %s whose outcome was not recorded (%s): adopted",
				tj.job.ID, Tag{w.chain.ID, s.Index, s.Attempt}, s.Submit.UTC().Format(time.RFC3339), s.State)
			s.JobID, s.State, s.End, s.Note = tj.job.ID, StatePending, time.Time{}, ""
			w.putSegment(s)
			w.event(EventAdopted, s, reason, 0)
			w.record(DecisionRecord{Segment: s.Index, Action: ActAdopt, Reason: reason, JobID: s.JobID})
		case w.segs[i].JobID != tj.job.ID && !tj.job.State.Finished():
			// Two live jobs carry one tag: a submission that reached the
			// backend after it had been given up. The stored one is the
			// segment; the other would run the same work twice.
			s := &w.segs[i]
			reason := fmt.Sprintf("job %s also carries tag %s, which belongs to job %s: a duplicate submission; cancel it",
				tj.job.ID, Tag{w.chain.ID, s.Index, s.Attempt}, s.JobID)
			w.tail = append(w.tail, Op{Kind: OpCancelDup, Record: &DecisionRecord{Time: w.now, ChainID: w.chain.ID, Segment: s.Index,
				Policy: w.chain.Policy, Action: ActCancel, Reason: reason, JobID: tj.job.ID}})
		}
	}
	// 1b, 1c. state updates
	for i := range w.segs {
		s := &w.segs[i]
		if s.JobID == "" || s.State.Finished() {
			continue
		}
		j := idx.byID[s.JobID]
		if j == nil {
			if historyOK && s.State != StateLost {
				s.State, s.End, s.Note = StateLost, w.now, "job reported neither by the live view nor by the history"
				w.putSegment(s)
				w.event(EventEnded, s, "LOST: "+s.Note, 0)
			}
			continue
		}
		before := *s
		s.State, s.ExitCode = j.State, j.ExitCode
		if !j.Submit.IsZero() {
			s.Submit = j.Submit
		}
		if !j.Start.IsZero() {
			s.Start = j.Start
		}
		if !j.End.IsZero() {
			s.End = j.End
		}
		if s.State.Finished() && s.End.IsZero() {
			s.End = w.now // ended between two cycles without an end time reported
		}
		if *s == before {
			continue
		}
		w.putSegment(s)
		if before.Start.IsZero() && !s.Start.IsZero() {
			w.event(EventStarted, s, "started at "+s.Start.UTC().Format(time.RFC3339), 0)
		}
		if !before.State.Finished() && s.State.Finished() {
			w.event(EventEnded, s, fmt.Sprintf("%s exit %d at %s", s.State, s.ExitCode, s.End.UTC().Format(time.RFC3339)), 0)
		}
	}
	// 1d. submissions whose job never appeared
	for i := range w.segs {
		s := &w.segs[i]
		if s.State != StateSubmitting || s.JobID != "" || !historyOK || w.now.Sub(s.Submit) < grace {
			continue
		}
		reason := fmt.Sprintf("no job tagged %s appeared in the live view or the history within %s of its submission at %s (mirage stopped before the backend answered, or the answer was lost): taken as not submitted",
			Tag{w.chain.ID, s.Index, s.Attempt}, grace, s.Submit.UTC().Format(time.RFC3339))
		s.State, s.End, s.Note = StateAbandoned, w.now, reason
		w.putSegment(s)
		w.event(EventAbandoned, s, reason, 0)
		w.record(DecisionRecord{Segment: s.Index, Action: ActAbandon, Reason: reason})
	}
	w.segs = slices.DeleteFunc(w.segs, func(s Segment) bool {
		if s.State == StateAbandoned {
			w.abandoned[segKey{s.Index, s.Attempt}] = s.Submit
			return true
		}
		return false
	})
	// 1e. gaps
	for idxSeg := 1; ; idxSeg++ {
		succ, pred := w.final(idxSeg), w.final(idxSeg-1)
		if succ == nil || pred == nil {
			break
		}
		gap, known := Gap(*pred, *succ)
		if !known {
			continue
		}
		if w.knewGap(succ, pred) {
			continue // recorded when it became known
		}
		w.event(EventGap, succ, gapText(succ.Index, pred.Index, gap), gap.Seconds())
	}
}

// knewGap reports whether the stored state (before this step) already
// held both the successor's start and the predecessor's end.
func (w *chainWork) knewGap(succ, pred *Segment) bool {
	os, okS := w.orig[segKey{succ.Index, succ.Attempt}]
	op, okP := w.orig[segKey{pred.Index, pred.Attempt}]
	if !okS || !okP {
		return false
	}
	_, known := Gap(op, os)
	return known
}

// final returns the last attempt of segment index, or nil.
func (w *chainWork) final(index int) *Segment {
	var out *Segment
	for i := range w.segs {
		if w.segs[i].Index == index {
			out = &w.segs[i]
		}
	}
	return out
}

func sortSegments(segs []Segment) {
	slices.SortFunc(segs, func(a, b Segment) int {
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return cmp.Compare(a.Attempt, b.Attempt)
	})
}

// gapText says in words how segment succ started against the end of
// segment pred: an interruption, an overlap, or neither when the gap
// rounds to 0 s (the log shows whole seconds; "+0s" is no interruption).
func gapText(succ, pred int, gap time.Duration) string {
	switch r := gap.Round(time.Second); {
	case r > 0:
		return fmt.Sprintf("segment %d started %s after segment %d ended (an interruption of %s)", succ, r, pred, r)
	case r < 0:
		return fmt.Sprintf("segment %d started %s before segment %d ended (an overlap of %s)", succ, -r, pred, -r)
	}
	return fmt.Sprintf("segment %d started as segment %d ended (no interruption, no overlap)", succ, pred)
}

// ForeignDetail says why job j, carrying tag, is left alone: another user
// submitted it (copying a tag needs no privilege).
func ForeignDetail(j *Job, tag Tag) string {
	return fmt.Sprintf("job %s of user %q carries tag %s of this chain: another user's job, or one whose comment mirage did not sign, ignored (not adopted, cancelled or followed)", j.ID, j.User, tag)
}
