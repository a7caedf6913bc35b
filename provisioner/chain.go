package provisioner

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
)

// ChainState is the lifecycle of a chain.
type ChainState string

// Chain states.
const (
	ChainActive    ChainState = "active"    // segments still to run
	ChainDone      ChainState = "done"      // finished as asked (N segments, or the work exited 0)
	ChainFailed    ChainState = "failed"    // stopped after too many failed segments; Reason says why
	ChainCancelled ChainState = "cancelled" // cancelled by the user
)

// Chain is one long-running piece of work split into wall-clock-limited
// segments that mirage submits one after another.
type Chain struct {
	ID      string   // stable id, e.g. "c-20261122-ab12cd"
	Name    string   // job name given to every segment
	Script  string   // absolute path of the batch script
	Args    []string // extra sbatch options, verbatim, as a list
	WorkDir string   // directory every segment runs in (sbatch --chdir): where submit ran; "" = the submitter's
	// Env is the environment every segment gets on top of the submitter's
	// (the daemon's, under cron a bare one): what submit recorded, PATH with
	// mirage's directory first and MIRAGE_BIN, mirage's absolute path.
	Env    map[string]string
	Policy string // submission policy name
	// PolicyWhy says why mirage chose Policy: the site's default (the
	// ranking measured for its scheduler settings), which the daemon
	// chooses again when the site's settings or the trained models change.
	// "" when the user named the policy.
	PolicyWhy string
	// Models is the directory of the learned policy's model, recorded by
	// submit ("" = wherever the daemon looks): the model that decided at
	// submit decides for the whole chain, whoever runs the daemon.
	Models string
	// Workload is what the chain runs (WorkloadTraining, WorkloadService,
	// "" for the published symmetric cost); Cost, when set, the explicit
	// weights given instead. Policies that take a cost decide with
	// CostOf().
	Workload   string
	Cost       *GapCost
	Segments   int           // segments to run; 0 = until a segment exits 0 before its limit (--until-done)
	MaxRetries int           // failed segments tolerated in a row before the chain fails
	Account    string        // team
	Partition  string        // partition
	TimeLimit  time.Duration // per-segment limit
	Nodes      int           // nodes per segment
	GPUs       int           // GPUs per segment
	State      ChainState    // lifecycle
	Reason     string        // why it ended, when it has
	Created    time.Time     // registration time
	// ScriptCopy is the private copy of Script that every segment is
	// submitted from (SubmitScript): on Slurm, made by submit (0600 in the
	// state directory, named by its content hash) and replaced only by
	// mirage update, so that what happens to the original afterwards
	// changes nothing the chain runs. "" where none was made: other
	// backends, and chains stored or recovered before the daemon made one.
	ScriptCopy string
	// ScriptHash is the copy's content hash, "sha256:HEX".
	ScriptHash string
	// ScriptSeen is what the last check found at Script when it no longer
	// matches the copy (edited, deleted, another user's file), or why the
	// chain has no usable copy; "" when all is well. It is shown, never
	// followed.
	ScriptSeen string
	// SignalLead is how long before its limit Slurm signals each segment
	// to checkpoint and exit (sbatch --signal=…@SECS, in the script's
	// #SBATCH lines or the options after --); 0: no signal asked. A
	// segment that exits 0 after its signal point continues the chain
	// (SignalPoint).
	SignalLead time.Duration
	// Keeper identifies the state database that keeps the chain: the one
	// whose daemon submits and cancels its jobs (TagKey.Keeper; "" for a
	// chain stored before #50: the database it is in). A daemon of another
	// state database refuses to act on it, so that one chain recovered
	// into a second database is not run twice (mirage recover --take-over
	// moves it).
	Keeper string
	// Cluster is the name of the cluster the chain's jobs run on (Slurm's
	// ClusterName; "" where the backend has none): a daemon whose backend
	// names another cluster refuses to act on it.
	Cluster string
}

// Segment is one job of a chain.
type Segment struct {
	ChainID  string    // owning chain
	Index    int       // 0-based position in the chain
	Attempt  int       // 0 for the first try, then retries
	JobID    string    // backend job id ("" until submitted)
	State    JobState  // last known state
	Submit   time.Time // submission time
	Start    time.Time // start time, when known
	End      time.Time // end time, when known
	ExitCode int       // exit code when finished
	Note     string    // why it ended, when mirage knows more than the state (rejection message, "lost")
	// Pinned are the nodes the job was submitted pinned to (SubmitPinned),
	// comma-separated, until the engine lifts its node list; "": not pinned.
	Pinned string
	// Done: the segment's job said the work is finished (`mirage done`,
	// carried in by the store); the chain ends when this segment ends,
	// whatever its state.
	Done bool
}

// Observation is what a Policy sees when asked about one chain.
type Observation struct {
	Now         time.Time     // decision time
	Snapshot    *Snapshot     // the cluster now
	History     []Job         // recently finished or started jobs (sacct / simulator), newest last; may be empty
	Chain       *Chain        // the chain asking
	Predecessor *Job          // the running (or pending) segment the successor follows
	Successor   SubmitRequest // the job that would be submitted
	// HandOffs are the realised hand-offs of the stored chains known by
	// Now, oldest first (StepInput.HandOffs): an online policy learns from
	// the outcomes of its own earlier decisions. Empty where nothing is
	// stored yet.
	HandOffs []HandOff
}

// Action is what a Policy may decide.
type Action string

// Policy actions.
const (
	Wait        Action = "wait"         // do nothing now; ask again next cycle
	SubmitNow   Action = "submit"       // submit the successor now
	SubmitAfter Action = "submit-after" // submit now with a dependency on the predecessor (afterany)
	// SubmitPinned submits now, restricted to the predecessor's nodes
	// (sbatch --nodelist): the successor cannot start before they free, so
	// it never runs alongside its predecessor, yet it queues (and ages)
	// from now and the scheduler plans those nodes for it.
	SubmitPinned Action = "submit-pinned"
)

// Decision is a Policy's answer with the reason recorded in the decision log.
type Decision struct {
	Action Action  // what to do
	Reason string  // human-readable reason, stored with the decision
	Score  float64 // the model's figure behind the decision (predicted gap in seconds, probability, Q-value), if any
	// Features is a digest of the features the policy used, if it computes
	// any; the engine records a digest of the observation otherwise.
	Features string
	// Begin, with SubmitNow, is the earliest time the successor may start
	// (sbatch --begin): the submission is made now, at the decision cycle,
	// and the scheduler starts the job from then, not at the cycle's
	// granularity. Zero: as soon as it can.
	Begin time.Time
}

// DecisionRecord is one entry of the decision log.
type DecisionRecord struct {
	Time     time.Time // when decided
	ChainID  string    // chain
	Segment  int       // successor index the decision was about
	Policy   string    // policy name
	Action   Action    // decision
	Reason   string    // why
	Score    float64   // model figure
	Features string    // digest of the features the policy saw, if any
	JobID    string    // job submitted as a result, if any
	Error    string    // error while applying, if any
	// Count is how many consecutive decisions this record stands for, when
	// the store coalesces waits (see Store.Record); 0 and 1 both mean one.
	Count int
	// Last is when the last of them was taken (zero: Time).
	Last time.Time
}

// Coalesces reports whether the wait d may be folded into prev, the
// chain's latest record: both are waits without error about the same
// segment under the same policy, for the same reason (SameReason: the
// figures in it may differ). Stores that coalesce (MemStore, the SQLite
// store) keep prev's Time, add d's count, take d's time as Last and d's
// reason, score and features as the latest.
func (d *DecisionRecord) Coalesces(prev *DecisionRecord) bool {
	return d.Action == Wait && d.Error == "" && prev.Action == Wait && prev.Error == "" &&
		prev.ChainID == d.ChainID && prev.Segment == d.Segment && prev.Policy == d.Policy && SameReason(prev.Reason, d.Reason)
}

// reasonFigureRE is a figure within a reason: a count, a job id, a
// duration ("3m20s", "+0s") or a time ("2026-12-07T03:00:00Z").
var reasonFigureRE = regexp.MustCompile(`[+−-]?[0-9][0-9A-Za-z.:+-]*`)

// SameReason reports whether two reasons say the same thing with other
// figures ("expected wait 3m" and "expected wait 2m"), so that waits for
// them are one entry of the log; a change of reason starts a new one.
func SameReason(a, b string) bool {
	return reasonFigureRE.ReplaceAllString(a, "#") == reasonFigureRE.ReplaceAllString(b, "#")
}

// SubmitScript is the script the chain's segments are submitted from: its
// private copy, else (no copy made) Script.
func (c *Chain) SubmitScript() string {
	if c.ScriptCopy != "" {
		return c.ScriptCopy
	}
	return c.Script
}

// CostOf is the cost the chain's hand-offs are priced by: its explicit
// weights, else its workload's (an unknown workload: the published cost).
func (c *Chain) CostOf() GapCost {
	if c.Cost != nil {
		return *c.Cost
	}
	if cost, err := WorkloadCost(c.Workload); err == nil {
		return cost
	}
	return DefaultGapCost
}

// CheckCost checks the chain's cost as submit records it: a known workload
// or none, or explicit weights that are not negative, not both.
func (c *Chain) CheckCost() error {
	switch {
	case c.Cost != nil && c.Workload != "":
		return errors.New("a workload and explicit cost weights exclude each other")
	case c.Cost != nil && (!weight(c.Cost.InterruptionPerHour) || !weight(c.Cost.OverlapPerHour) || !weight(c.Cost.OverlapPerGPUHour) || c.Cost.OverlapBudget < 0):
		return fmt.Errorf("cost weights must be finite and not negative: %s", c.Cost)
	case c.Workload != "" && !IsWorkload(c.Workload):
		return fmt.Errorf("workload %q: want one of %v", c.Workload, Workloads())
	}
	return nil
}

// weight reports whether w is a usable cost weight: finite and not negative.
func weight(w float64) bool { return w >= 0 && !math.IsInf(w, 1) }
