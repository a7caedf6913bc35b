package provisioner

import (
	"context"
	"errors"
	"time"
)

// The ports: every interface through which the core meets the outside
// world, in one place. Backends (the simulator, Slurm, Kubernetes) implement
// Cluster and HistorySource; stores (memory, SQLite) implement Store and
// optionally EventStore, DecisionLog and TxStore; policies implement
// Policy; team rules implement Rules. Within this package only MemStore
// (the store ports) and the baselines (Policy) implement any.

// ---- the cluster ----

// Cluster is the port every backend implements: the simulator, Slurm (CLI)
// and Kubernetes (client-go).
type Cluster interface {
	// Snapshot returns the current view of nodes and jobs.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Submit submits a job and returns its id; rejections wrap ErrRejected.
	Submit(ctx context.Context, req SubmitRequest) (string, error)
	// Cancel cancels a job.
	Cancel(ctx context.Context, jobID string) error
	// Signal sends a signal (e.g. "USR1") to a running job.
	Signal(ctx context.Context, jobID string, signal string) error
}

// Errors a Cluster reports for expected conditions.
var (
	ErrRejected     = errors.New("submission rejected")    // the backend refused the job
	ErrUnavailable  = errors.New("backend unavailable")    // controller/API server not reachable
	ErrNotFound     = errors.New("job not found")          // no such job
	ErrNoAccounting = errors.New("accounting unavailable") // history (sacct) unavailable; live view still works
)

// ErrIncomplete is wrapped by a HistorySource error whose jobs are true
// but not all there: some records of the backend's answer could not be
// read and were skipped. Such a history is used for what it shows, never
// for what it lacks (a job missing from it is not taken as gone: no
// segment is marked lost, no submission abandoned).
var ErrIncomplete = errors.New("records skipped: the view is incomplete")

// ErrImplausibleView is wrapped by the error of an Engine cycle that did
// nothing because its view of the cluster was too implausible to act on
// (Plan.Halt): it would have taken many of the user's unfinished jobs for
// gone at once.
var ErrImplausibleView = errors.New("the cluster's view is implausible: nothing done")

// ErrNotSubmitted is wrapped by Cluster.Submit errors that guarantee the
// backend created nothing (a deferral, a request refused before it was
// sent), so the engine may decide again at once instead of waiting for the
// submission's grace.
var ErrNotSubmitted = errors.New("nothing was submitted")

// HistorySource lists recently started or finished jobs (sacct on Slurm, the
// simulator's record, finished pods on Kubernetes) for Observation.History.
// Backends without history return (nil, ErrNoAccounting); policies must cope
// with an empty history. A history that skipped records comes with an
// error wrapping ErrIncomplete and the jobs it did read.
type HistorySource interface {
	// History returns jobs that started or finished at or after since, oldest start first.
	History(ctx context.Context, since time.Time) ([]Job, error)
}

// Clock supplies "now"; logic never calls time.Now directly.
type Clock interface {
	Now() time.Time
}

// Timer is a Clock that can also wait: the adapters wait on it between
// retries and for grace periods, so that a test controls both (the wall
// clock is internal/wallclock).
type Timer interface {
	Clock
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

// ---- team rules ----

// Admission is the team rules' answer for one submission.
type Admission struct {
	Allow    bool   // submit now; false defers the submission to a later cycle
	Borrowed bool   // the job runs on borrowed (idle, other teams') quota and may be reclaimed
	Reason   string // why, recorded in the decision log
	// Reclaim, when set, is borrowed work to stop before the submission, on
	// a backend that does not queue (Capabilities.Queues false; on Slurm
	// the QOS preemption reclaims): Step plans it as an OpReclaim ahead of
	// the OpSubmit, whose request then names the freed node.
	Reclaim *Reclaim
}

// Rules is the team-rules hook (quota, borrowing, packing) the engine
// consults before every submission, on every backend. Admit may rewrite
// req: a preemptible QOS for borrowed work, NodeList/Exclude as packing
// hints, and on a backend that does not queue (snap.Caps) the node chosen
// for the job in NodeList. It must be pure: no I/O, no wall clock.
type Rules interface {
	Admit(now time.Time, snap *Snapshot, req *SubmitRequest) (Admission, error)
}

// Victim is one borrowed job a reclaim stops.
type Victim struct {
	JobID    string        // job id
	Team     string        // the team that borrowed
	Node     string        // the node where its GPUs are freed
	GPUs     int           // GPUs it holds (on all its nodes)
	Priority int64         // scheduler priority
	Progress time.Duration // work since its last checkpoint (or its start): what the reclaim costs it
	Reason   string        // why it was chosen
}

// Reclaim is what the team rules decided to stop so that a job of a team
// under its quota can run (Admission.Reclaim, OpReclaim). The Engine
// executes it through the Cluster's ports (ExecuteReclaim): it asks every
// victim to checkpoint (Cluster.Signal), then evicts them all at once, each
// with the whole grace period (Evictor), and only once they are gone
// submits the job onto Node.
type Reclaim struct {
	Team    string        // the team the room is for
	Node    string        // where the room is made (the job's node)
	Victims []Victim      // the jobs to stop, by id
	Signal  string        // the checkpoint signal, e.g. "USR1"
	Grace   time.Duration // how long each victim has between the signal and its end
	Reason  string        // one line, for the decision log
}

// Evictor is a Cluster that stops a job at mirage's request for a
// reclaim, giving it a grace period to checkpoint and exit (Kubernetes:
// the Eviction API). EvictBorrowed returns once the job is gone. It
// re-reads the job first and refuses (wrapping ErrNotBorrowed) one that is
// no longer borrowed work, which it leaves running.
type Evictor interface {
	EvictBorrowed(ctx context.Context, jobID string, grace time.Duration, reason string) error
}

// ErrNotBorrowed is matched by an eviction refused because its victim is
// no longer borrowed work.
var ErrNotBorrowed = errors.New("reclaim victim is not borrowed work")

// Unpinner is a Cluster that can lift the node list of a pending job
// (Slurm: scontrol update JobId=ID ReqNodeList=), so that a successor
// pinned to its predecessor's nodes (SubmitPinned) that lost them to
// another job may start anywhere: the Engine's executor of OpUnpin, which
// Step plans only on backends whose snapshots say so (Capabilities.Unpins),
// once the predecessor has ended, or before where the chain's cost prices
// an early start below an equal interruption. Elsewhere a pinned successor
// keeps waiting for its nodes.
type Unpinner interface {
	Unpin(ctx context.Context, jobID string) error
}

// Pinger is a Cluster that can tell quickly whether it answers
// (slurm.Client.Ping: a TCP connection to slurmctld).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Ping asks cl whether it answers, if it is a Pinger (else nil), before the
// chain commands' first request: with slurmctld down, every Slurm command
// spends about 10 s in Slurm's own retries before failing.
func Ping(ctx context.Context, cl Cluster) error {
	if p, ok := cl.(Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// ---- policies ----

// Policy decides, for one chain at one instant, whether to submit its successor.
type Policy interface {
	// Name is the policy's registry name ("reactive", "xgb", ...).
	Name() string
	// Decide looks at one observation and returns a decision. It must not
	// perform I/O nor keep per-call state that changes later decisions
	// unless documented.
	Decide(obs *Observation) (Decision, error)
}

// PolicyFactory builds a policy by registry name ("reactive", "xgb", ...).
// The models package provides the full registry; the provisioner's own
// baselines are available through BaselinePolicy.
type PolicyFactory func(name string) (Policy, error)

// PolicyKey names the policy a chain decides with: its registry name and
// the models directory its learned policies are loaded from (Chain.Models;
// "" for the caller's default directory).
type PolicyKey struct {
	Models string
	Name   string
}

// KeyOf is the policy key of chain c.
func KeyOf(c *Chain) PolicyKey { return PolicyKey{Models: c.Models, Name: c.Policy} }

// PolicyResolver builds the policy a key names. It may do I/O (a learned
// policy reads its model files) and is called by the Engine before Step,
// once per key and cycle: a resolver that loads files keeps what it loaded
// (models.PolicyFactory reads a model again only when its files change).
type PolicyResolver func(PolicyKey) (Policy, error)

// ByName resolves every key by its name alone, ignoring its models
// directory: the resolver of callers whose chains all share one registry
// (the evaluation harness, tests).
func ByName(f PolicyFactory) PolicyResolver {
	return func(k PolicyKey) (Policy, error) { return f(k.Name) }
}

// Resolved is a policy resolved before Step, or why it could not be.
type Resolved struct {
	Policy Policy
	Err    error
}

// ResolvePolicies resolves the policy of every active chain of records
// with r (nil: BaselinePolicy), once per key: the Policies of a StepInput.
func ResolvePolicies(records []ChainRecord, r PolicyResolver) map[PolicyKey]Resolved {
	out := map[PolicyKey]Resolved{}
	for i := range records {
		ch := &records[i].Chain
		k := KeyOf(ch)
		if ch.State != ChainActive {
			continue
		}
		if _, ok := out[k]; ok {
			continue
		}
		var res Resolved
		if r != nil {
			res.Policy, res.Err = r(k)
		} else {
			res.Policy, res.Err = BaselinePolicy(k.Name)
		}
		out[k] = res
	}
	return out
}

// ---- stores ----

// Store is durable chain state (SQLite in production, memory in the simulator).
type Store interface {
	// Chains lists chains; with activeOnly only ChainActive ones.
	Chains(ctx context.Context, activeOnly bool) ([]Chain, error)
	// Chain returns one chain or ErrChainNotFound.
	Chain(ctx context.Context, id string) (*Chain, error)
	// Segments returns a chain's segments in order.
	Segments(ctx context.Context, chainID string) ([]Segment, error)
	// PutChain inserts or updates a chain.
	PutChain(ctx context.Context, c *Chain) error
	// PutSegment inserts or updates a segment (keyed by chain, index, attempt).
	PutSegment(ctx context.Context, s *Segment) error
	// Record appends to the decision log. A wait that Coalesces with the
	// chain's latest record may be folded into it (its Count grows, Last
	// becomes d.Time), so a chain waiting for hours keeps one row, not one
	// per cycle; every other decision is a row of its own.
	Record(ctx context.Context, d *DecisionRecord) error
}

// ErrChainNotFound is returned by a Store for an unknown chain id.
var ErrChainNotFound = errors.New("chain not found")

// ClusterNamer is a backend that knows the name of its cluster (Slurm's
// ClusterName), so that a chain registered on one cluster is never acted
// on through a view of another (Chain.Cluster).
type ClusterNamer interface {
	ClusterName() string
}

// ClusterNameOf is cl's cluster name, "" when it has none.
func ClusterNameOf(cl Cluster) string {
	if n, ok := cl.(ClusterNamer); ok {
		return n.ClusterName()
	}
	return ""
}

// Owner is a backend whose jobs have owners (Job.User): Self is the user
// mirage acts for there. The chain operations never adopt, cancel, signal
// or recover another user's job, since anyone can copy a chain's tag into
// a job comment that squeue shows to all.
type Owner interface {
	Self() string
}

// SelfOf is the user cl acts for, "" when it has no owners (the simulator,
// Kubernetes pods): the owner checks are then off.
func SelfOf(cl Cluster) string {
	if o, ok := cl.(Owner); ok {
		return o.Self()
	}
	return ""
}

// Owns reports whether job j is the user's of cl (always, without owners).
func Owns(cl Cluster, j *Job) bool {
	self := SelfOf(cl)
	return self == "" || j.User == self
}

// ErrForeignJob is matched by errors about a job mirage will not touch: it
// belongs to another user, or does not carry the chain's tag.
var ErrForeignJob = errors.New("not this user's chain job")

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

// SegmentLister is implemented by stores that read every chain's segments
// at once (the SQLite store: one query), which the engine uses for the
// hand-offs of ended chains instead of one read per chain.
type SegmentLister interface {
	// AllSegments returns every stored segment by chain, each chain's in
	// index, then attempt order.
	AllSegments(ctx context.Context) (map[string][]Segment, error)
}

// DoneSource is implemented by stores that take in, on their own, what
// jobs said of their work (`mirage done` markers: the SQLite store reads
// the files the jobs wrote). The Engine calls it after the cycle's
// snapshot and history — a job seen ended wrote its marker before it ended
// — and reloads the segments of the chains it names.
type DoneSource interface {
	// IngestDone marks the segments the markers name Done and returns
	// their chains; problems are markers it could not read (left in
	// place), err a failure of the store.
	IngestDone(ctx context.Context) (chains []string, problems []error, err error)
}

// TxStore is implemented by stores that can group writes atomically. The
// Store handed to fn writes inside the transaction (and implements
// EventStore when the outer store does); an error from fn rolls back.
type TxStore interface {
	InTx(ctx context.Context, fn func(Store) error) error
}
