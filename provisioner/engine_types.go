package provisioner

import (
	"time"
)

// Actions the engine itself records in the decision log, beside the
// policies' Wait, SubmitNow, SubmitAfter and SubmitPinned.
const (
	ActFirst  Action = "first"  // the first segment of a chain is submitted
	ActRetry  Action = "retry"  // a failed segment is submitted again
	ActAdopt  Action = "adopt"  // a tagged job found in the backend was taken into its chain
	ActEnd    Action = "end"    // the chain ended (done or failed)
	ActCancel Action = "cancel" // a successor made unnecessary by the end of the work (or a duplicate job) was cancelled
	ActUnpin  Action = "unpin"  // a pinned successor's node list was lifted (its predecessor ended, it still pends)
	// ActReclaim: borrowed work was stopped (checkpoint signal, grace,
	// eviction) to make room for the chain's next submission.
	ActReclaim Action = "reclaim"
	// ActAbandon: a submission whose outcome was never recorded left no job
	// within its grace; it is taken as not done.
	ActAbandon Action = "abandon"
	ActError   Action = "error" // the engine could not decide or act for this chain
)

// DefaultSubmitGrace is how long a submission whose outcome was never
// recorded (mirage stopped between starting sbatch and committing the job
// id, or sbatch gave no answer) blocks its chain: until a job carrying its
// tag shows up (it is adopted), or until this long after the submission,
// when the submission is taken as not done and may be made again. It
// bounds how late a job from a killed or timed-out sbatch can still reach
// the controller: the Slurm backend kills its commands when mirage dies
// and bounds each with a timeout (30 s by default), and slurmctld answers
// or drops a request within its MessageTimeout (10 s by default).
const DefaultSubmitGrace = 2 * time.Minute

// Segment states mirage assigns itself (the backend never reports them).
// REJECTED and LOST count as finished (JobState.Finished) and as failed
// attempts. SUBMITTING is the intent written before the backend is asked:
// not finished, and it holds the chain until its job is found or its grace
// (DefaultSubmitGrace) has passed. ABANDONED is an intent whose job never
// appeared: finished, not an attempt (the same segment and attempt, with
// the same tag, may be submitted again).
const (
	StateRejected   JobState = "REJECTED"   // the backend refused the submission; Segment.Note holds its message
	StateLost       JobState = "LOST"       // the job is reported neither live nor in the history
	StateSubmitting JobState = "SUBMITTING" // submission started, its outcome not recorded yet
	StateAbandoned  JobState = "ABANDONED"  // a submission that left no job: not an attempt
)

// EventKind names an entry of the event log.
type EventKind string

// Event kinds.
const (
	EventRegistered EventKind = "registered"  // a chain was registered
	EventSubmitted  EventKind = "submitted"   // a segment was submitted
	EventAdopted    EventKind = "adopted"     // a tagged job was adopted
	EventStarted    EventKind = "started"     // a segment started
	EventEnded      EventKind = "ended"       // a segment ended (Detail: state, exit code)
	EventGap        EventKind = "gap"         // successor start − predecessor end, seconds in Value (positive: interruption)
	EventChainEnded EventKind = "chain-ended" // a chain ended (Detail: reason)
	EventCancelled  EventKind = "cancelled"   // a job was cancelled by mirage
	EventError      EventKind = "error"       // an error outside any one decision (snapshot, history)
	EventAbandoned  EventKind = "abandoned"   // a submission left no job within its grace: taken as not done
	EventDuplicate  EventKind = "duplicate"   // a second job carries a segment's tag: cancelled
	EventForeign    EventKind = "foreign"     // another user's job carries the chain's tag: ignored (recorded once per job)
	EventScript     EventKind = "script"      // the chain's script: a private copy made or adopted, or what its original became (Chain.ScriptSeen)
	EventReclaimed  EventKind = "reclaimed"   // borrowed work (JobID, another team's) was stopped to make room for the chain's submission
	EventWorkDone   EventKind = "work-done"   // a segment's job said the work is finished (mirage done); Time: when it said so
	EventPolicy     EventKind = "policy"      // mirage chose the chain's policy again (the site's default changed; Detail: from, to, why)
)

// Event is one entry of the event log: what happened to a chain's jobs, as
// opposed to what was decided (DecisionRecord).
type Event struct {
	Time    time.Time // when mirage observed or caused it
	ChainID string    // chain ("" for cluster-wide errors)
	Segment int       // segment index (-1 when not about one segment)
	Attempt int       // attempt of that segment
	JobID   string    // backend job id, if any
	Kind    EventKind // what happened
	Detail  string    // human-readable detail
	Value   float64   // a figure (the gap in seconds for EventGap)
}

// ChainRecord is a stored chain with its segments, ordered by index then attempt.
type ChainRecord struct {
	Chain    Chain
	Segments []Segment
}

// OpKind names one effect of a Plan.
type OpKind string

// Plan operations.
const (
	OpPutSegment OpKind = "put-segment" // store Segment (adopted, started, ended)
	OpPutChain   OpKind = "put-chain"   // store Chain (ended, with its reason)
	OpRecord     OpKind = "record"      // append Record to the decision log
	OpEvent      OpKind = "event"       // append Event to the event log
	OpCancel     OpKind = "cancel"      // cancel Segment.JobID, then store Segment as cancelled
	OpCancelDup  OpKind = "cancel-dup"  // cancel Record.JobID, a duplicate of a stored segment's job; the segment is left as it is
	OpSubmit     OpKind = "submit"      // submit Request, then store Segment with the job id and Record with it
	OpUnpin      OpKind = "unpin"       // lift the node list of pending Segment.JobID (Unpinner), then store Segment unpinned and Record
	// OpReclaim stops Reclaim's victims (ExecuteReclaim: checkpoint
	// signal, grace, eviction) and records Record; it comes right before
	// the OpSubmit of the same chain, which is made only if it succeeded.
	OpReclaim OpKind = "reclaim"
)

// Op is one effect the apply layer performs. Which fields are set depends on Kind.
type Op struct {
	Kind    OpKind
	Chain   *Chain          // OpPutChain
	Segment *Segment        // OpPutSegment, OpCancel, OpSubmit (the segment to store; JobID filled after submission), OpUnpin
	Request *SubmitRequest  // OpSubmit
	Record  *DecisionRecord // OpRecord, OpSubmit (the decision behind the submission), OpCancel, OpUnpin
	Event   *Event          // OpEvent
	Reclaim *Reclaim        // OpReclaim
}

// Plan is the pure decision step's output, like etcd raft's Ready: what to
// persist and what to send. Bookkeeping ops (put, record, event) come
// first in the order they were decided; cancels and submits follow.
type Plan struct {
	Now time.Time // decision time
	Ops []Op      // effects, in order
	// Halt, when set, says why the step decided nothing at all: a view of
	// the cluster too implausible to act on (ImplausibleLoss). Ops is then
	// empty.
	Halt string
}

// Counts tallies a plan's operations; unpins and reclaims count with the
// cancels (each changes jobs the backend already has).
func (p *Plan) Counts() (book, cancels, submits int) {
	for i := range p.Ops {
		switch p.Ops[i].Kind {
		case OpSubmit:
			submits++
		case OpCancel, OpCancelDup, OpUnpin, OpReclaim:
			cancels++
		default:
			book++
		}
	}
	return
}
