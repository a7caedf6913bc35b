package provisioner

import "time"

// DefaultHistoryWindow is how far back the history a policy looks at
// reaches: the published design's 24 hours. The engine reads at least this
// much (further back when a stored segment needs it); the features and the
// baselines look at this window of Observation.History.
const DefaultHistoryWindow = 24 * time.Hour

// Observe builds what a policy sees of one chain at now: the cluster's
// snapshot, the history (jobs that started or finished in at least the
// last DefaultHistoryWindow, oldest start first), the chain, its
// predecessor (nil when there is none, as for a wait prediction), the
// successor it would submit and the hand-offs known by now. It is the one
// constructor of an Observation: the engine's step, the simulator-side
// harness (datasets, training) and wait predictions call it, so a policy
// sees the same observation of the same cluster state wherever it runs.
// The predecessor is copied, so a policy cannot change the caller's job.
func Observe(now time.Time, snap *Snapshot, history []Job, chain *Chain, pred *Job, succ SubmitRequest, handOffs []HandOff) *Observation {
	obs := &Observation{Now: now, Snapshot: snap, History: history, Chain: chain, Successor: succ, HandOffs: handOffs}
	if pred != nil {
		p := *pred
		obs.Predecessor = &p
	}
	return obs
}

// FindJob is job id as the snapshot lists it, else as the history last
// lists it (a job that has left the queue), else nil.
func FindJob(snap *Snapshot, history []Job, id string) *Job {
	if snap != nil {
		if j := snap.Job(id); j != nil {
			return j
		}
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].ID == id {
			return &history[i]
		}
	}
	return nil
}
