package protocol

import (
	"time"
)

// The run protocol replays whole runs: each chain carries Work of useful
// work and is work-conserving. A segment's run time is decided as it
// starts from the work still to do:
//
//   - it does useful work from its restart point u = max(its start, the end
//     of every earlier segment still running) + R (the restart time: it
//     restores the last checkpoint, which exists only once its predecessor
//     has written it);
//   - it ends when the work is done (exit 0, at u + remaining work), or by
//     its limit (Slurm's --signal makes it checkpoint C before the limit:
//     it saves the work done until limit − C), or, with hand-off, C after
//     its successor starts (the successor's `mirage handoff`: it saves the
//     work done until that start);
//   - without hand-off a successor that starts early holds its GPUs idle
//     until its predecessor ends;
//   - a successor started while its predecessor completes the work (its
//     policy did not know the work would end) exits as that one ends.
//
// So an early start costs one checkpoint and one restart with hand-off,
// the overlap itself without it, and every segment's limit end pays C and R
// as well.
const (
	DefaultWork       = 7 * 24 * time.Hour // useful work per chain
	DefaultRestart    = 5 * time.Minute    // R
	DefaultCheckpoint = 5 * time.Minute    // C
)

// segRun is one segment's account in a work-conserving chain.
type segRun struct {
	job      string
	start    time.Time
	useful   time.Time     // when its useful work begins
	end      time.Time     // as planned at its start, or as a hand-off moved it
	work     time.Duration // useful work it saves (or completes)
	finishes bool          // it completes the chain's work at end
	handed   bool          // its successor's hand-off ended it
}

// workLedger keeps a work-conserving chain's books during the replay.
type workLedger struct {
	work, restart, checkpoint, limit time.Duration
	handOff                          bool
	segs                             map[int]*segRun
}

func newWorkLedger(work, restart, checkpoint, limit time.Duration, handOff bool) *workLedger {
	return &workLedger{work: work, restart: restart, checkpoint: checkpoint, limit: limit, handOff: handOff, segs: map[int]*segRun{}}
}

// started books segment k (job id) starting at now. It returns the
// predecessor job to signal (hand-off; "" for none) and when the new
// segment finishes the work (zero: it runs to its limit).
func (l *workLedger) started(k int, id string, now time.Time) (signal string, finishAt time.Time) {
	// The hand-off: a predecessor still running and not about to end
	// checkpoints what it has done until now and exits C later.
	if p := l.segs[k-1]; p != nil && l.handOff && now.Add(l.checkpoint).Before(p.end) {
		p.end = now.Add(l.checkpoint)
		p.work = max(0, min(p.work, now.Sub(p.useful)))
		p.finishes, p.handed = false, true
		signal = p.job
	}
	// Its useful work starts after every earlier segment has ended (their
	// checkpoints are written) and after the restart.
	ready := now
	var done time.Duration
	for j, s := range l.segs {
		if j < k {
			done += s.work
			if s.end.After(ready) {
				ready = s.end
			}
		}
	}
	s := &segRun{job: id, start: now, useful: ready.Add(l.restart)}
	l.segs[k] = s
	remaining := l.work - done
	last := now.Add(l.limit - l.checkpoint) // the --signal checkpoint before the limit
	switch {
	case remaining <= 0: // an earlier segment completes the work: it exits as that one has
		s.end = minTime(ready, now.Add(l.limit))
		finishAt = s.end
	case !s.useful.Add(remaining).After(last):
		s.end, s.work, s.finishes = s.useful.Add(remaining), remaining, true
		finishAt = s.end
	default:
		s.end = now.Add(l.limit)
		s.work = max(0, last.Sub(s.useful))
	}
	return signal, finishAt
}

// doneAt is when the chain's work is complete (zero: not booked as done).
func (l *workLedger) doneAt() time.Time {
	var total time.Duration
	var at time.Time
	for _, s := range l.segs {
		total += s.work
		if s.finishes {
			at = s.end
		}
	}
	if at.IsZero() || total < l.work {
		return time.Time{}
	}
	return at
}

// interval is a segment's span as the simulator recorded it.
type interval struct{ start, end time.Time }

// downtime is the time in [from, to] not covered by any of the spans.
func downtime(from, to time.Time, spans []interval) time.Duration {
	if !to.After(from) {
		return 0
	}
	var down time.Duration
	at := from // everything before at is accounted for
	sorted := append([]interval(nil), spans...)
	for i := 1; i < len(sorted); i++ { // insertion sort by start: a handful of segments
		for j := i; j > 0 && sorted[j].start.Before(sorted[j-1].start); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, sp := range sorted {
		if !sp.start.Before(to) {
			break
		}
		if sp.start.After(at) {
			down += sp.start.Sub(at)
		}
		if sp.end.After(at) {
			at = sp.end
		}
	}
	if to.After(at) {
		down += to.Sub(at)
	}
	return down
}
