package features

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// DefaultHistoryWindow is how far back Observation.History reaches: the
// published design's 24 hours of history.
const DefaultHistoryWindow = 24 * time.Hour

// Observe builds the Observation a policy sees for one chain at now, the
// same way on every backend: the cluster's snapshot, the jobs that started
// or finished in the last window (empty when the backend keeps no
// accounting: ErrNoAccounting is not an error here), the predecessor as the
// snapshot reports it (or, once it has left the queue, as the history
// does; nil when neither knows it) and the successor request. The daemon
// calls it with the Slurm client; the simulator harness with a sim.Sim and
// SimHistory; both therefore hand policies identical observations for
// identical cluster states.
func Observe(ctx context.Context, c provisioner.Cluster, h provisioner.HistorySource, now time.Time, window time.Duration,
	chain *provisioner.Chain, predID string, succ provisioner.SubmitRequest) (*provisioner.Observation, error) {
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("observe chain: snapshot: %w", err)
	}
	if now.IsZero() {
		now = snap.Time
	}
	if window <= 0 {
		window = DefaultHistoryWindow
	}
	var hist []provisioner.Job
	if h != nil {
		hist, err = h.History(ctx, now.Add(-window))
		if err != nil && !errors.Is(err, provisioner.ErrNoAccounting) {
			return nil, fmt.Errorf("observe chain: history: %w", err)
		}
	}
	obs := &provisioner.Observation{Now: now, Snapshot: snap, History: hist, Chain: chain, Successor: succ}
	if predID != "" {
		if j := snap.Job(predID); j != nil {
			obs.Predecessor = j
		} else {
			for i := len(hist) - 1; i >= 0; i-- {
				if hist[i].ID == predID {
					p := hist[i]
					obs.Predecessor = &p
					break
				}
			}
		}
	}
	return obs, nil
}

// WaitObservation frames a job shape as the observation the schema expects:
// the job is the successor and there is no predecessor.
func WaitObservation(now time.Time, snap *provisioner.Snapshot, history []provisioner.Job, job provisioner.SubmitRequest) *provisioner.Observation {
	return &provisioner.Observation{Now: now, Snapshot: snap, History: history, Successor: job}
}
