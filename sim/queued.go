package sim

import "time"

// QueuedGPUHours is what the replayed trace's jobs (not those submitted
// through the Cluster seam) spent queued between from and to: Σ GPUs ×
// the part of [submission, start) inside [from, min(to, Now)). A job still
// pending counts until Now, one cancelled before it started until its
// cancellation. Two forks of one replay that differ only in what was
// submitted through the seam differ in it by what those submissions cost
// everyone else (a job requeued after a start counts from its submission
// to its last start).
func (s *Sim) QueuedGPUHours(from, to time.Time) float64 {
	lo, hi := from.Unix(), min(to.Unix(), s.now)
	if hi <= lo {
		return 0
	}
	var secs float64
	for j := range int32(s.nTrace) {
		sp := &s.specs[j]
		if sp.submit >= hi {
			break // specs are sorted by submission up to nTrace
		}
		d := &s.dyns[j]
		end := hi
		switch {
		case d.state == stFuture:
			continue // not arrived yet (a latency still running)
		case d.start >= 0:
			end = min(d.start, hi)
		case d.state != stPending:
			end = min(d.end, hi)
		}
		if q := end - max(sp.submit, lo); q > 0 {
			secs += float64(q) * float64(sp.nodes*sp.gpn)
		}
	}
	return secs / 3600
}
