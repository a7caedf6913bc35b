package provisioner

import (
	"context"
	"time"
)

// Actions the engine itself records in the decision log, beside the
// policies' Wait, SubmitNow and SubmitAfter.
const (
	ActFirst  Action = "first"  // the first segment of a chain is submitted
	ActRetry  Action = "retry"  // a failed segment is submitted again
	ActAdopt  Action = "adopt"  // a tagged job found in the backend was taken into its chain
	ActEnd    Action = "end"    // the chain ended (done or failed)
	ActCancel Action = "cancel" // a successor made unnecessary by the end of the work was cancelled
	ActError  Action = "error"  // the engine could not decide or act for this chain
)

// Segment states mirage assigns itself (the backend never reports them).
// Both count as finished (JobState.Finished) and as failed attempts.
const (
	StateRejected JobState = "REJECTED" // the backend refused the submission; Segment.Note holds its message
	StateLost     JobState = "LOST"     // the job is reported neither live nor in the history
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

// EventStore is implemented by stores that keep an event log beside the
// decision log (MemStore, the SQLite store).
type EventStore interface {
	// AddEvent appends an event.
	AddEvent(ctx context.Context, e *Event) error
	// Events lists a chain's events, oldest first ("" lists cluster-wide ones).
	Events(ctx context.Context, chainID string) ([]Event, error)
}

// DecisionLog is implemented by stores that can read their decision log back.
type DecisionLog interface {
	// Decisions lists a chain's decisions, oldest first.
	Decisions(ctx context.Context, chainID string) ([]DecisionRecord, error)
}

// TxStore is implemented by stores that can group writes atomically. The
// Store handed to fn writes inside the transaction (and implements
// EventStore when the outer store does); an error from fn rolls back.
type TxStore interface {
	InTx(ctx context.Context, fn func(Store) error) error
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
	OpSubmit     OpKind = "submit"      // submit Request, then store Segment with the job id and Record with it
)

// Op is one effect the apply layer performs. Which fields are set depends on Kind.
type Op struct {
	Kind    OpKind
	Chain   *Chain          // OpPutChain
	Segment *Segment        // OpPutSegment, OpCancel, OpSubmit (the segment to store; JobID filled after submission)
	Request *SubmitRequest  // OpSubmit
	Record  *DecisionRecord // OpRecord, OpSubmit (the decision behind the submission), OpCancel
	Event   *Event          // OpEvent
}

// Plan is the pure decision step's output, like etcd raft's Ready: what to
// persist and what to send. Bookkeeping ops (put, record, event) come
// first in the order they were decided; cancels and submits follow.
type Plan struct {
	Now time.Time // decision time
	Ops []Op      // effects, in order
}

// Counts tallies a plan's operations.
func (p *Plan) Counts() (book, cancels, submits int) {
	for i := range p.Ops {
		switch p.Ops[i].Kind {
		case OpSubmit:
			submits++
		case OpCancel:
			cancels++
		default:
			book++
		}
	}
	return
}
