package provisioner_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// doneStore is a MemStore that takes in a `mirage done` marker of segment
// 0 of chain c1 once one is written (provisioner.DoneSource).
type doneStore struct {
	*provisioner.MemStore
	written bool // the job has written its marker
}

func (s *doneStore) IngestDone(ctx context.Context) ([]string, []error, error) {
	if !s.written {
		return nil, nil, nil
	}
	s.written = false
	segs, err := s.Segments(ctx, "c1")
	if err != nil {
		return nil, nil, err
	}
	for i := range segs {
		if segs[i].Index == 0 {
			segs[i].Done = true
			if err := s.PutSegment(ctx, &segs[i]); err != nil {
				return nil, nil, err
			}
		}
	}
	return []string{"c1"}, nil, nil
}

// endingCluster is a backend whose one job, segment 0 of chain c1, runs
// `mirage done` and exits 0 between the moment the cycle starts and its
// snapshot: the snapshot is the first to show it ended, and its marker was
// written just before.
type endingCluster struct {
	store     *doneStore
	now       time.Time
	submitted []string
}

func (c *endingCluster) Snapshot(context.Context) (*provisioner.Snapshot, error) {
	c.store.written = true // the job wrote its marker, then ended
	return &provisioner.Snapshot{Time: c.now, Jobs: []provisioner.Job{{ID: "10", State: provisioner.StateCompleted, Comment: "mirage:c1/0.0",
		Submit: c.now.Add(-time.Hour), Start: c.now.Add(-time.Hour), End: c.now.Add(-30 * time.Second), TimeLimit: time.Hour}}}, nil
}

func (c *endingCluster) Submit(_ context.Context, req provisioner.SubmitRequest) (string, error) {
	c.submitted = append(c.submitted, req.Comment)
	return "11", nil
}
func (c *endingCluster) Cancel(context.Context, string) error         { return nil }
func (c *endingCluster) Signal(context.Context, string, string) error { return nil }

// TestEngineTakesDoneAfterSnapshot: the engine has the store take in the
// `mirage done` markers after the cycle's snapshot, so a job the snapshot
// shows ended is never decided on without the marker it wrote before it
// ended. By hand: segment 0 of an --until-done chain (limit 1 h, --signal
// lead 40 s) started at 08:00 and exited 0 at 08:59:30, after its signal
// point (08:58:20): without its marker the chain would go on (lead submits
// segment 1 at once); with it, the chain is done and nothing is submitted.
func TestEngineTakesDoneAfterSnapshot(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	st := &doneStore{MemStore: provisioner.NewMemStore()}
	ch := provisioner.Chain{ID: "c1", Name: "train", Script: "/home/u/train.sbatch", Policy: provisioner.PolicyLead, MaxRetries: 2,
		TimeLimit: time.Hour, SignalLead: 40 * time.Second, Nodes: 1, GPUs: 4, State: provisioner.ChainActive, Created: now.Add(-time.Hour)}
	if err := st.PutChain(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSegment(ctx, &provisioner.Segment{ChainID: "c1", JobID: "10", State: provisioner.StateRunning, Submit: now.Add(-time.Hour), Start: now.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	cl := &endingCluster{store: st, now: now}
	eng := &provisioner.Engine{Cluster: cl, Store: st, Clock: provisioner.ClockFunc(func() time.Time { return now }), Log: slog.New(slog.DiscardHandler)}
	if _, err := eng.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := st.Chain(ctx, "c1")
	if err != nil || got.State != provisioner.ChainDone || got.Reason != "segment 0 (job 10 COMPLETED) said the work is finished (mirage done)" || len(cl.submitted) != 0 {
		t.Errorf("chain %+v (%v), submitted %v; want done by mirage done, nothing submitted", got, err, cl.submitted)
	}
}
