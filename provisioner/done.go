package provisioner

import (
	"fmt"
	"time"
)

// When is a chain's work done? The one statement of the rule (the guide
// docs/guide/chains-and-daemon.md#when-the-work-is-done says it in words):
//
//  1. A segment whose job ran `mirage done` (Segment.Done) ends the chain
//     when it ends, whatever its state, and whether the chain runs until
//     done or N segments: the user said the work is finished. Until it
//     ends, no successor is submitted and those queued ahead are cancelled.
//  2. Otherwise only an --until-done chain (Segments 0) ends early, on a
//     segment that exited 0 (COMPLETED) before its signal point
//     (SignalPoint): nothing stopped it, so its work ran out.
//  3. A segment that exited 0 at or after its signal point was stopped to
//     checkpoint — by Slurm's --signal, which may come up to SignalEarly
//     before it was asked for, or at its limit — and the chain goes on.
//  4. So does one that exited 0 after its successor had started: `mirage
//     handoff` stopped it (a hand-off).
//
// Exiting 0 well before the signal point without `mirage done` keeps its
// old meaning (the work is done), so scripts that end when their work
// ends need no change; scripts that checkpoint on a signal should say
// `mirage done` when the work is really finished.

// SignalEarly is how much earlier than asked Slurm may deliver a --signal
// (sbatch(1): "Due to the resolution of event handling by Slurm, the
// signal may be sent up to 60 seconds earlier than specified"). A segment's
// signal point allows for it, with or without --signal: an exit 0 in the
// last minute before the limit is never taken for the end of the work.
const SignalEarly = 60 * time.Second

// SignalPoint is the earliest instant at which segment s of chain ch may
// have been stopped to checkpoint: its start plus the chain's limit, less
// the chain's --signal lead (Chain.SignalLead, 0 without --signal) and
// SignalEarly. ok is false when the start or the limit is unknown.
func SignalPoint(ch *Chain, s *Segment) (point time.Time, ok bool) {
	if s.Start.IsZero() || ch.TimeLimit <= 0 {
		return time.Time{}, false
	}
	return s.Start.Add(ch.TimeLimit - ch.SignalLead - SignalEarly), true
}

// workDone reports whether segment s (the final attempt of its index) ended
// chain ch's work, by the rule above, and why. next is the final attempt of
// the following segment, nil when there is none.
func workDone(s, next *Segment, ch *Chain) (why string, done bool) {
	switch {
	case !s.State.Finished():
		return "", false
	case s.Done:
		return fmt.Sprintf("segment %d (%s) said the work is finished (mirage done)", s.Index, describeEnd(s)), true
	case ch.Segments > 0 || !succeeded(s):
		return "", false
	case next != nil && !next.Start.IsZero() && !s.End.IsZero() && !next.Start.After(s.End):
		return "", false // its successor already ran when it exited: a hand-off (mirage handoff), not the end of the work
	}
	point, ok := SignalPoint(ch, s)
	if !ok || s.End.IsZero() || !s.End.Before(point) {
		return "", false // stopped to checkpoint (or it cannot be told): the chain goes on
	}
	return fmt.Sprintf("segment %d (job %s) exited 0 %s before its signal point (its limit less %s): the work is done",
		s.Index, s.JobID, secs(point.Sub(s.End)), secs(ch.SignalLead+SignalEarly)), true
}

// stoppedNote says, for the reason of the decision that continues an
// --until-done chain after segment s exited 0, why that exit was not the
// end of the work ("" for any other segment).
func stoppedNote(s *Segment, ch *Chain) string {
	if ch.Segments > 0 || !succeeded(s) {
		return ""
	}
	return " (at or after its signal point: stopped to checkpoint, not done; a job says it is done with mirage done)"
}
