package provisioner

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ExecuteReclaim stops the victims of r through cl's ports, in the order
// the team rules promise (docs/guide/team-rules.md#reclaim):
//
//  1. every victim is asked to checkpoint (Cluster.Signal with r.Signal);
//     a backend that cannot be reached, or a victim already gone, stops
//     the reclaim here: nothing is evicted. Any other signal failure (a
//     checkpoint hook that is down) is noted and the reclaim goes on, since
//     the owner's quota must be freed either way;
//  2. all victims are evicted at once, each given the whole grace period
//     (Evictor.EvictBorrowed returns when its victim is gone).
//
// It returns what was done, one line per step, for the decision log; the
// error joins every eviction that failed. cl must be an Evictor.
func ExecuteReclaim(ctx context.Context, cl Cluster, r *Reclaim) ([]string, error) {
	ev, ok := cl.(Evictor)
	if !ok {
		return nil, fmt.Errorf("reclaim for team %s: the backend cannot evict jobs; nothing done", r.Team)
	}
	var notes []string
	for _, v := range r.Victims {
		err := cl.Signal(ctx, v.JobID, r.Signal)
		switch {
		case errors.Is(err, ErrUnavailable), errors.Is(err, ErrNotFound):
			return notes, fmt.Errorf("reclaim for team %s: checkpoint signal to %s: %w; nothing evicted", r.Team, v.JobID, err)
		case err != nil:
			notes = append(notes, fmt.Sprintf("checkpoint signal to %s partly failed (the eviction goes ahead: the owner's quota must be freed): %v", v.JobID, err))
		default:
			notes = append(notes, fmt.Sprintf("asked %s to checkpoint (%s)", v.JobID, r.Signal))
		}
	}
	errs := make([]error, len(r.Victims))
	var wg sync.WaitGroup
	for i, v := range r.Victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ev.EvictBorrowed(ctx, v.JobID, r.Grace, fmt.Sprintf("team %s needs its quota: %s", r.Team, v.Reason))
		}()
	}
	wg.Wait()
	for i, v := range r.Victims {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("evict %s: %w", v.JobID, errs[i])
			continue
		}
		notes = append(notes, fmt.Sprintf("evicted %s after at most a %s grace period", v.JobID, r.Grace))
	}
	if err := errors.Join(errs...); err != nil {
		return notes, fmt.Errorf("reclaim for team %s: %w", r.Team, err)
	}
	return notes, nil
}
