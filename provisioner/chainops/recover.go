package chainops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Recovered is one chain found by RecoverChains.
type Recovered struct {
	Chain  string `json:"chain"`
	Jobs   int    `json:"jobs"`
	State  string `json:"state"`
	Action string `json:"action"` // recovered, known, would-recover
	Note   string `json:"note,omitempty"`
	// Script and Args are the specification read back from the tags: what
	// the daemon will submit the successors from (empty when none was found).
	Script string   `json:"script,omitempty"`
	Args   []string `json:"args,omitempty"`
}

// ActionWouldRecover is the Recovered.Action of a chain a dry run would register.
const ActionWouldRecover = "would-recover"

// ActionNotFound is the Recovered.Action of a chain asked for by name that
// neither the store nor any tagged job knows.
const ActionNotFound = "not-found"

// ActionNeedsOptions is the Recovered.Action of a chain whose jobs'
// comments leave its sbatch options out (they may hold secrets), when
// RecoverOptions.Options does not give them: it is not registered.
const ActionNeedsOptions = "needs-options"

// ErrNeedsOptions is matched by NotRecovered's error for chains that were
// not registered for want of their sbatch options.
var ErrNeedsOptions = errors.New("the sbatch options are not in the jobs' comments")

// CommentKeeper is a history source that can tell whether its history
// keeps job comments (Slurm: AccountingStoreFlags=job_comment). Without
// them RecoverChains finds a chain only by a job of it still live.
type CommentKeeper interface {
	KeepsComments(ctx context.Context) (bool, error)
}

// RecoverOptions choose what RecoverChains looks at and whether it writes.
type RecoverOptions struct {
	Chains []string      // only these chains (all when empty)
	Since  time.Duration // how far back to read the history
	DryRun bool          // report, write nothing
	// Check, when set, applies the checks of mirage submit to a recovered
	// chain's specification (its script and sbatch options); a chain that
	// fails them is registered as failed, with the reason, so no successor
	// is ever submitted from it.
	Check func(c *provisioner.Chain) error
	// Key verifies the tagged jobs' comments (TagKey.Verified): a job it
	// does not verify is treated as another user's. nil: no MACs.
	Key *provisioner.TagKey
	// Options, when not nil, are the sbatch options of the one chain in
	// Chains, as given at its submit: its jobs' comments say only how many
	// words they are, which Options must match (else, and without Options,
	// the chain is reported ActionNeedsOptions and not registered).
	Options []string
	// Keeper is the identity of the state database recovered into
	// (TagKey.Keeper). A chain whose jobs another database submitted
	// (their comments name its keeper) is registered as that database's,
	// and this one's daemon will not act on it, unless TakeOver: a chain
	// recovered into a second --state while the first one's daemon runs
	// would be run by both.
	Keeper string
	// TakeOver makes this database the keeper of the chains recovered, and
	// of those it already holds that another database keeps (their
	// Action is then ActionTakenOver): for a state directory lost with its
	// key, or moved.
	TakeOver bool
}

// ActionTakenOver is the Recovered.Action of a chain the store held as
// another state database's, now this one's (RecoverOptions.TakeOver).
const ActionTakenOver = "taken-over"

// RecoverChains rebuilds the chains the store does not hold from the
// tagged jobs of the live view and of the history since now − Since
// (every job mirage submits carries its chain's tag and specification in
// its comment). Only the user's own jobs count (Owns): anyone can copy a
// tag and a specification into a job comment. Tagged jobs are grouped by chain (a job seen live and in
// the history counts once; live wins while unfinished); a chain the store
// holds is left alone ("known"); the others are registered with their
// segments ("recovered"), as cancelled when their last job was cancelled
// and nothing is live, as failed when no job carries a readable
// specification. The result is ordered by chain id.
func RecoverChains(ctx context.Context, st ChainStore, cl provisioner.Cluster, hs provisioner.HistorySource, now time.Time, o RecoverOptions) ([]Recovered, error) {
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster snapshot: %w", err)
	}
	hist, err := hs.History(ctx, now.Add(-o.Since))
	if err != nil {
		return nil, fmt.Errorf("job history (sacct): %w", err)
	}
	byID := map[string]provisioner.Job{}
	for _, j := range hist {
		byID[j.ID] = j
	}
	for _, j := range snap.Jobs {
		if old, ok := byID[j.ID]; !ok || !old.State.Finished() {
			byID[j.ID] = j
		}
	}
	chains := map[string][]taggedJob{}
	foreign := map[string]bool{} // chains asked for whose tag only other users' jobs carry
	for id := range byID {
		j := byID[id]
		t, ok := provisioner.ParseTag(j.Comment)
		if ok && (!provisioner.Owns(cl, &j) || !o.Key.Verified(provisioner.SelfOf(cl), &j)) { // another user's job, or one mirage did not sign: never rebuilt into this user's database
			foreign[t.Chain] = true
			continue
		}
		if ok && (len(o.Chains) == 0 || slices.Contains(o.Chains, t.Chain)) {
			chains[t.Chain] = append(chains[t.Chain], taggedJob{t, &j})
		}
	}
	ids := make([]string, 0, len(chains))
	for id := range chains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var results []Recovered
	for _, id := range ids {
		jobs := chains[id]
		slices.SortFunc(jobs, func(a, b taggedJob) int {
			if c := cmp.Compare(a.tag.Segment, b.tag.Segment); c != 0 {
				return c
			}
			if c := cmp.Compare(a.tag.Attempt, b.tag.Attempt); c != 0 {
				return c
			}
			return cmp.Compare(a.job.Submit.UnixNano(), b.job.Submit.UnixNano())
		})
		r := Recovered{Chain: id, Jobs: len(jobs)}
		if known, err := st.Chain(ctx, id); err == nil {
			r.Action, r.Note = "known", "already in the state database"
			if err := takeOverKnown(ctx, st, known, now, o, &r); err != nil {
				return nil, err
			}
			results = append(results, r)
			continue
		} else if !errors.Is(err, provisioner.ErrChainNotFound) {
			return nil, err
		}
		var ch provisioner.Chain
		found := false
		spec := ""
		for i := len(jobs) - 1; i >= 0 && !found; i-- {
			spec = jobs[i].job.Comment
			ch, found = provisioner.ParseChainSpec(spec)
		}
		if found {
			if note := recoverOptions(&ch, spec, o.Options); note != "" {
				r.Action, r.Note, r.Script = ActionNeedsOptions, note, ch.Script
				results = append(results, r)
				continue
			}
		}
		if !found {
			ch = provisioner.Chain{ID: id, Name: jobs[0].job.Name, Policy: provisioner.PolicyReactive, State: provisioner.ChainFailed,
				Reason: "recovered from tags without a specification: cannot submit successors (resubmit with mirage submit)"}
		}
		if found && o.Check != nil {
			// The spec came back from a job comment: it goes through the
			// checks of submit before the daemon may submit from it.
			if err := o.Check(&ch); err != nil {
				ch.State, ch.Reason = provisioner.ChainFailed, "recovered, but its specification fails the checks of mirage submit: "+err.Error()+" (resubmit with mirage submit)"
			}
		}
		if ch.Created.IsZero() {
			ch.Created = jobs[0].job.Submit
		}
		ch.Cluster = cmp.Or(ch.Cluster, provisioner.ClusterNameOf(cl)) // comments before #50 name none
		keeperNote := keep(&ch, o)
		var segs []provisioner.Segment
		seen := map[[2]int]bool{}
		anyLive := false
		for _, x := range jobs {
			k := [2]int{x.tag.Segment, x.tag.Attempt}
			if seen[k] {
				continue // a duplicate tag: keep the first submitted
			}
			seen[k] = true
			j := x.job
			segs = append(segs, provisioner.Segment{ChainID: id, Index: x.tag.Segment, Attempt: x.tag.Attempt, JobID: j.ID, State: j.State,
				Submit: j.Submit, Start: j.Start, End: j.End, ExitCode: j.ExitCode})
			anyLive = anyLive || !j.State.Finished()
		}
		switch last := segs[len(segs)-1]; {
		case ch.State != provisioner.ChainActive || anyLive:
		case last.State == provisioner.StateCancelled:
			ch.State, ch.Reason = provisioner.ChainCancelled, fmt.Sprintf("recovered: its last job %s was cancelled", last.JobID)
		case markedCancelled(jobs):
			ch.State, ch.Reason = provisioner.ChainCancelled, fmt.Sprintf("recovered: cancelled by mirage cancel after its last job %s ended (%s)", last.JobID, provisioner.EndMark)
		}
		r.State, r.Note, r.Script, r.Args = string(ch.State), cmp.Or(ch.Reason, keeperNote), ch.Script, ch.Args
		if o.DryRun {
			r.Action = ActionWouldRecover
			results = append(results, r)
			continue
		}
		err := st.InTx(ctx, func(tx provisioner.Store) error {
			if err := tx.PutChain(ctx, &ch); err != nil {
				return err
			}
			for i := range segs {
				if err := tx.PutSegment(ctx, &segs[i]); err != nil {
					return err
				}
			}
			return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: id, Segment: -1, Kind: provisioner.EventRegistered,
				Detail: fmt.Sprintf("recovered from %d tagged job(s) in squeue/sacct", len(segs))})
		})
		if err != nil {
			return nil, err
		}
		r.Action = "recovered"
		results = append(results, r)
	}
	// A chain asked for by name that no tagged job carries.
	for _, id := range o.Chains {
		if _, ok := chains[id]; ok {
			continue
		}
		r := Recovered{Chain: id, Action: ActionNotFound, Note: "no job of yours carries its tag in squeue, nor in sacct since " + now.Add(-o.Since).UTC().Format(time.RFC3339)}
		if foreign[id] {
			r.Note += " (only other users' jobs, or ones mirage did not sign, do: not recovered)"
		}
		if _, err := st.Chain(ctx, id); err == nil {
			r.Action, r.Note = "known", "already in the state database (no tagged job found)"
		} else if !errors.Is(err, provisioner.ErrChainNotFound) {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// markedCancelled says whether a job of the chain carries
// provisioner.EndMark: mirage cancel marked the chain's last job when it
// cancelled it between segments.
func markedCancelled(jobs []taggedJob) bool {
	for _, x := range jobs {
		if provisioner.MarkedCancelled(x.job.Comment) {
			return true
		}
	}
	return false
}

// keep sets the keeper of ch, recovered from its jobs' comments (ch.Keeper:
// the keeper they name, "" before #50), and says what it means when it is
// not this database (o.Keeper): a chain whose comments name no keeper, or
// that o.TakeOver takes, is this database's; another's stays that
// database's, which this daemon leaves alone.
func keep(ch *provisioner.Chain, o RecoverOptions) string {
	switch {
	case o.Keeper == "" || ch.Keeper == o.Keeper:
		return ""
	case ch.Keeper == "":
		ch.Keeper = o.Keeper
		return ""
	case o.TakeOver:
		old := ch.Keeper
		ch.Keeper = o.Keeper
		return fmt.Sprintf("taken over from the state database that kept it (keeper %s)", old)
	}
	return fmt.Sprintf("its jobs were submitted from another state database (keeper %s; this one is %s): registered as that database's, "+
		"and this one's daemon will not act on it; if that database is lost (with its directory or tag.key), take it over: mirage recover --take-over %s", ch.Keeper, o.Keeper, ch.ID)
}

// takeOverKnown makes this database (o.Keeper) the keeper of a chain the
// store holds as another database's, when o.TakeOver (r says so), with an
// event; a dry run only says it would.
func takeOverKnown(ctx context.Context, st ChainStore, c *provisioner.Chain, now time.Time, o RecoverOptions, r *Recovered) error {
	if !o.TakeOver || o.Keeper == "" || c.Keeper == "" || c.Keeper == o.Keeper {
		return nil
	}
	old := c.Keeper
	r.Action, r.State, r.Note = ActionTakenOver, string(c.State), fmt.Sprintf("kept by another state database (keeper %s): now this one's", old)
	if o.DryRun {
		r.Action = ActionWouldRecover
		return nil
	}
	c.Keeper = o.Keeper
	return st.InTx(ctx, func(tx provisioner.Store) error {
		if err := tx.PutChain(ctx, c); err != nil {
			return err
		}
		return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: c.ID, Segment: -1, Kind: provisioner.EventRegistered,
			Detail: fmt.Sprintf("taken over from the state database that kept it (keeper %s) by mirage recover --take-over", old)})
	})
}

// recoverOptions gives ch, read from the job comment spec, its sbatch
// options: those the comment carries (version 1), else given (the user's
// own, which must number as many words as the comment says). It returns
// why the chain cannot be registered, "" when it can.
func recoverOptions(ch *provisioner.Chain, spec string, given []string) string {
	n, carried := provisioner.SpecOptions(spec)
	switch {
	case given != nil && len(given) != n:
		return fmt.Sprintf("it was submitted with %d sbatch option word(s), and %d were given: give the options of its submit after \"--\"", n, len(given))
	case given != nil:
		ch.Args = slices.Clone(given)
	case !carried:
		return fmt.Sprintf("its jobs' comments leave out its %d sbatch option word(s) (they may hold secrets): give them as at its submit: mirage recover %s -- OPTIONS...", n, ch.ID)
	}
	return ""
}

// NotRecovered is the error for the chains asked for by name that no
// tagged job carries (ActionNotFound), wrapping ErrChainNotFound; nil when
// every one was found.
func NotRecovered(results []Recovered, since time.Duration) error {
	var missing []string
	for _, r := range results {
		if r.Action == ActionNotFound {
			missing = append(missing, r.Chain)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w: no tagged job in squeue, nor in sacct of the last %s (a longer --since looks further back)",
		strings.Join(missing, ", "), provisioner.ErrChainNotFound, since)
}

// NeedOptions is the error for the chains not registered for want of their
// sbatch options (ActionNeedsOptions), wrapping ErrNeedsOptions; nil when
// there are none.
func NeedOptions(results []Recovered) error {
	var needs []string
	for _, r := range results {
		if r.Action == ActionNeedsOptions {
			needs = append(needs, r.Chain)
		}
	}
	if len(needs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: not registered: %w; give each chain's with mirage recover CHAIN -- OPTIONS... (see the NOTE column)",
		strings.Join(needs, ", "), ErrNeedsOptions)
}

// taggedJob is a job with the chain tag its comment carries.
type taggedJob struct {
	tag provisioner.Tag
	job *provisioner.Job
}
