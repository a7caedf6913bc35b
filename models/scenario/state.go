package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// ErrOutsideReplay marks a time the trace's replay never reaches.
var ErrOutsideReplay = errors.New("outside the trace's replay")

// StateAt replays the trace jobs (named name) on the cluster cfg up to at and
// returns what squeue/sinfo and sacct would show then: the snapshot, and the
// jobs active in the window before at, as the replay ran them or, with
// recorded, as the trace recorded them (RecordedHistory).
func StateAt(ctx context.Context, name string, jobs []traces.Job, cfg sim.Config, at time.Time, window time.Duration, recorded bool) (*provisioner.Snapshot, []provisioner.Job, error) {
	sc, err := NewScenario(name, jobs, cfg)
	if err != nil {
		return nil, nil, err
	}
	s, err := sc.NewSim()
	if err != nil {
		return nil, nil, err
	}
	s.Run(at)
	if !s.Now().Equal(at) {
		return nil, nil, fmt.Errorf("%w: it runs to %s", ErrOutsideReplay, s.Now().Format(time.RFC3339))
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	if recorded {
		return snap, NewRecordedHistory(jobs).At(at, at.Add(-window)), nil
	}
	return snap, s.History(at.Add(-window)), nil
}
