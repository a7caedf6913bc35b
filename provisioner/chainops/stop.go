package chainops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// StopOptions configure StopPredecessor.
type StopOptions struct {
	Job    string        // the predecessor's job id
	Signal string        // asks it to checkpoint and exit, e.g. "USR1"
	Grace  time.Duration // how long to wait for it to end
	Poll   time.Duration // how often to look
	Settle time.Duration // signal only once it has run this long (its script must have set its trap), and at least MinRun of its limit
	Cancel bool          // cancel it if it still runs after Grace
	// Self, when set, is the user running the hand-off: a predecessor of
	// another user is never signalled nor cancelled.
	Self string
	// Chain is the hand-off's chain ($MIRAGE_CHAIN), required: a
	// predecessor that does not carry its tag is never signalled nor
	// cancelled (without it, any job of the user's could be).
	Chain string
}

// StopPredecessor is the hand-off `mirage handoff` runs in a successor that
// started while its predecessor still runs: it waits until the predecessor
// has run for Settle and for MinRun (half its limit, when the live view
// gives it), sends it the signal, and waits up to Grace for it to end,
// looking every Poll; then, with Cancel, it cancels it. now and sleep are the clock and the waiting
// (a simulator advances its logical time in sleep). say reports each step
// as a line. A predecessor that is not running, or ends before the
// signal, is nothing to hand off; one that still runs after Grace without
// Cancel is an error.
func StopPredecessor(ctx context.Context, cl provisioner.Cluster, now func() time.Time, sleep func(context.Context, time.Duration) error, o StopOptions, say func(line string)) error {
	pred, err := liveJob(ctx, cl, o.Job)
	if err != nil {
		return err
	}
	if pred == nil || pred.State.Finished() {
		say(fmt.Sprintf("predecessor %s is not running: nothing to hand off", o.Job))
		return nil
	}
	if o.Self != "" && pred.User != o.Self {
		return fmt.Errorf("predecessor %s belongs to user %q, not %q: not signalled (%w)", o.Job, pred.User, o.Self, provisioner.ErrForeignJob)
	}
	if o.Chain == "" {
		return fmt.Errorf("predecessor %s: no chain given whose tag it must carry: not signalled (%w)", o.Job, provisioner.ErrForeignJob)
	}
	if tag, ok := provisioner.ParseTag(pred.Comment); !ok || tag.Chain != o.Chain {
		return fmt.Errorf("predecessor %s does not carry a tag of chain %s (comment %q): not signalled (%w)", o.Job, o.Chain, pred.Comment, provisioner.ErrForeignJob)
	}
	if !pred.Start.IsZero() {
		ran := now().Sub(pred.Start)
		if floor := provisioner.MinRun(pred.TimeLimit); floor > o.Settle && ran < floor {
			say(fmt.Sprintf("predecessor %s has run %s of its %s limit: signalling it once it has run half of it (%s), in %s",
				o.Job, secs(ran), secs(pred.TimeLimit), secs(floor), secs(floor-ran)))
		}
		if young := max(o.Settle, provisioner.MinRun(pred.TimeLimit)) - ran; young > 0 {
			if err := sleep(ctx, young); err != nil {
				return err
			}
		}
	}
	if err := cl.Signal(ctx, o.Job, o.Signal); err != nil {
		if errors.Is(err, provisioner.ErrNotFound) {
			say(fmt.Sprintf("predecessor %s ended before the signal: nothing to hand off", o.Job))
			return nil
		}
		return fmt.Errorf("signal %s to predecessor %s: %w", o.Signal, o.Job, err)
	}
	start := now()
	say(fmt.Sprintf("sent SIG%s to predecessor %s; waiting up to %s for it to end", o.Signal, o.Job, o.Grace))
	for {
		j, err := liveJob(ctx, cl, o.Job)
		if err != nil {
			return err
		}
		waited := now().Sub(start)
		if j == nil || j.State.Finished() {
			say(fmt.Sprintf("predecessor %s ended after %s: hand-off complete", o.Job, waited.Round(time.Second)))
			return nil
		}
		if waited >= o.Grace {
			break
		}
		if err := sleep(ctx, min(o.Poll, o.Grace-waited)); err != nil {
			return err
		}
	}
	if o.Cancel {
		if err := cl.Cancel(ctx, o.Job); err != nil && !errors.Is(err, provisioner.ErrNotFound) {
			return fmt.Errorf("cancel predecessor %s after the grace time: %w", o.Job, err)
		}
		say(fmt.Sprintf("predecessor %s still ran after %s: cancelled", o.Job, o.Grace))
		return nil
	}
	return fmt.Errorf("predecessor %s still runs after %s (it may not trap SIG%s; use --cancel to cancel it then)", o.Job, o.Grace, o.Signal)
}

// liveJob is the job in the live view, nil when the view no longer lists it.
func liveJob(ctx context.Context, cl provisioner.Cluster, id string) (*provisioner.Job, error) {
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster snapshot: %w", err)
	}
	return snap.Job(id), nil
}
