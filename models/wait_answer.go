package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// WaitQuery is the shape of a job whose wait is predicted, as sbatch gives it.
type WaitQuery struct {
	Nodes       int
	TimeLimit   time.Duration
	GPUsPerNode int // < 0: whole nodes (the GPUs of the partition's first schedulable node)
	Partition   string
	Account     string
}

// ParseSbatch completes q from sbatch's -t (a finite Slurm time limit) and
// --gres (gpu:N or gpu:TYPE:N per node; "": whole nodes) as `mirage
// predict-wait` takes them, and checks -N. The errors name the option.
func (q *WaitQuery) ParseSbatch(timeLimit, gres string) error {
	if q.Nodes < 1 {
		return fmt.Errorf("-N %d: want at least 1 node", q.Nodes)
	}
	d, err := slurmfmt.ParseDuration(timeLimit)
	if q.TimeLimit = d.Value; err != nil || d.Kind != slurmfmt.Set || q.TimeLimit <= 0 {
		return fmt.Errorf("-t %q: want a finite Slurm time limit such as 48:00:00 or 2-00:00:00", timeLimit)
	}
	q.GPUsPerNode = -1 // whole nodes
	if gres != "" {
		if q.GPUsPerNode, _, err = slurmfmt.GPUsFromGRES(gres); err != nil {
			return fmt.Errorf("--gres %q: %w (want gpu:N or gpu:TYPE:N)", gres, err)
		}
	}
	return nil
}

// ClusterState is what a wait prediction is made from: a snapshot at Now,
// the recent history, and where they came from.
type ClusterState struct {
	Now    time.Time
	Snap   *provisioner.Snapshot
	Hist   []provisioner.Job
	Source string
	// Partitions are the partitions' limits where the source knows them
	// (a live Slurm), for Runnable; nil elsewhere.
	Partitions []PartitionLimit
}

// SnapshotState reads the content of a snapshot file named name:
// {"snapshot": {...}, "history": [...]} as `mirage predict-wait
// --save-snapshot` writes it (provisioner.SnapshotFile), or a bare
// snapshot. The snapshot must have a time.
func SnapshotState(b []byte, name string) (*ClusterState, error) {
	sf, err := provisioner.DecodeSnapshot(b)
	if err != nil || sf.Bare && sf.Snapshot.Time.IsZero() {
		return nil, errors.New(`not a snapshot (want {"snapshot": {...}, "history": [...]}, as --save-snapshot writes)`)
	}
	if sf.Snapshot.Time.IsZero() {
		return nil, errors.New("snapshot has no time")
	}
	return &ClusterState{Now: sf.Snapshot.Time, Snap: sf.Snapshot, Hist: sf.History, Source: "snapshot " + name}, nil
}

// SnapshotFileState reads a snapshot file (SnapshotState); errors name the
// --snapshot flag and the file.
func SnapshotFileState(path string) (*ClusterState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--snapshot: %w", err)
	}
	st, err := SnapshotState(b, path)
	if err != nil {
		return nil, fmt.Errorf("--snapshot %s: %w", path, err)
	}
	return st, nil
}

// LiveState reads a live cluster's snapshot and, when h is not nil, the jobs
// that ended in the window before it (none when the cluster keeps no accounting).
func LiveState(ctx context.Context, c provisioner.Cluster, h provisioner.HistorySource, window time.Duration) (*ClusterState, error) {
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("live snapshot: %w", err)
	}
	var hist []provisioner.Job
	if h != nil {
		hist, err = h.History(ctx, snap.Time.Add(-window))
		if err != nil && !errors.Is(err, provisioner.ErrNoAccounting) && !errors.Is(err, provisioner.ErrIncomplete) { // features from what was read
			return nil, fmt.Errorf("live history: %w", err)
		}
	}
	return &ClusterState{Now: snap.Time, Snap: snap, Hist: hist, Source: "live"}, nil
}

// WaitAnswer is a prediction for a query in a cluster state: as JSON, or as
// two lines of text (WriteText).
type WaitAnswer struct {
	At        time.Time `json:"at"`
	Source    string    `json:"source"` // where the cluster state came from
	Nodes     int       `json:"nodes"`
	GPUs      int       `json:"gpus"`
	TimeLimit string    `json:"time_limit"`
	Partition string    `json:"partition,omitempty"`
	Account   string    `json:"account,omitempty"`
	P10       float64   `json:"p10_s"`
	P50       float64   `json:"p50_s"`
	P90       float64   `json:"p90_s"`
	// Warning says when the answer is an extrapolation (ShapeWarning).
	Warning string `json:"warning,omitempty"`

	limit time.Duration
	est   WaitEstimate
}

// Answer predicts the wait of q submitted in the cluster state st.
func (p *WaitPredictor) Answer(st *ClusterState, q WaitQuery) (*WaitAnswer, error) {
	now, snap := st.Now, st.Snap
	perNode := q.GPUsPerNode
	if perNode < 0 {
		perNode = wholeNodeGPUs(snap, q.Partition)
	}
	req := provisioner.SubmitRequest{Account: q.Account, Partition: q.Partition, TimeLimit: q.TimeLimit, Nodes: q.Nodes, GPUs: q.Nodes * perNode}
	est, err := p.Predict(features.WaitObservation(now, snap, st.Hist, req))
	if err != nil {
		return nil, err
	}
	return &WaitAnswer{At: now, Source: st.Source, Nodes: req.Nodes, GPUs: req.GPUs, TimeLimit: q.TimeLimit.String(),
		Partition: req.Partition, Account: req.Account, P10: est.P10.Seconds(), P50: est.P50.Seconds(), P90: est.P90.Seconds(),
		limit: q.TimeLimit, est: est}, nil
}

// WriteText prints the job's shape and the expected wait with its p10–p90 interval.
func (a *WaitAnswer) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d node(s), %d GPU(s), limit %s, submitted at %s (%s):\n", a.Nodes, a.GPUs, a.limit, a.At.Format(time.RFC3339), a.Source)
	_, err := fmt.Fprintf(w, "expected wait %s (p10 %s – p90 %s)\n", a.est.P50, a.est.P10, a.est.P90)
	return err
}

// wholeNodeGPUs is the GPUs of the first schedulable node of the partition (whole-node allocation).
func wholeNodeGPUs(snap *provisioner.Snapshot, partition string) int {
	for _, n := range snap.Nodes {
		if n.State != provisioner.NodeUp {
			continue
		}
		if partition == "" || len(n.Partitions) == 0 {
			return n.GPUs
		}
		for _, p := range n.Partitions {
			if p == partition {
				return n.GPUs
			}
		}
	}
	return 0
}
