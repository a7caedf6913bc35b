package state

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// benchCluster returns a fixed snapshot (plus the jobs submitted to it)
// and a fixed history: the cost measured is mirage's own.
type benchCluster struct {
	snap    provisioner.Snapshot
	history []provisioner.Job
	n       int
}

func (b *benchCluster) Snapshot(context.Context) (*provisioner.Snapshot, error) {
	s := b.snap
	return &s, nil
}

func (b *benchCluster) History(context.Context, time.Time) ([]provisioner.Job, error) {
	return b.history, nil
}

func (b *benchCluster) Submit(_ context.Context, req provisioner.SubmitRequest) (string, error) {
	b.n++
	id := "s" + strconv.Itoa(b.n)
	b.snap.Jobs = append(b.snap.Jobs, provisioner.Job{ID: id, State: provisioner.StatePending, Comment: req.Comment, Submit: b.snap.Time,
		TimeLimit: req.TimeLimit, Nodes: req.Nodes, GPUs: req.GPUs, Depend: req.Dependency.String()})
	return id, nil
}

func (b *benchCluster) Cancel(context.Context, string) error         { return nil }
func (b *benchCluster) Signal(context.Context, string, string) error { return nil }

// benchSetup builds 1,000 active chains (the four baselines in turn), each
// with its first segment running since t0 (limit 1 h), in a cluster
// snapshot of 50,000 jobs (1,000 of them the chains', 24,500 running and
// 24,500 pending with start estimates) on 2,000 nodes, with 5,000 jobs of
// history; the cycle runs at t0 + 20 min.
func benchSetup(b *testing.B, st provisioner.Store) (*benchCluster, *provisioner.Engine) {
	ctx := context.Background()
	now := t0.Add(20 * time.Minute)
	cl := &benchCluster{snap: provisioner.Snapshot{Time: now, Caps: provisioner.Capabilities{Queues: true, Unpins: true}}} // Slurm's
	for i := 0; i < 2000; i++ {
		cl.snap.Nodes = append(cl.snap.Nodes, provisioner.Node{Name: fmt.Sprintf("n%04d", i), State: provisioner.NodeUp, CPUs: 64, GPUs: 8, GPUsUsed: 8})
	}
	policies := provisioner.BaselineNames()
	for i := 0; i < 1000; i++ {
		c := provisioner.Chain{ID: fmt.Sprintf("c-bench-%04d", i), Name: "bench", Script: "/x.sbatch", Policy: policies[i%4], MaxRetries: 2,
			Partition: "gpu", TimeLimit: time.Hour, Nodes: 1, GPUs: 8, State: provisioner.ChainActive, Created: t0}
		if err := st.PutChain(ctx, &c); err != nil {
			b.Fatal(err)
		}
		id := strconv.Itoa(1_000_000 + i)
		if err := st.PutSegment(ctx, &provisioner.Segment{ChainID: c.ID, JobID: id, State: provisioner.StateRunning, Submit: t0, Start: t0}); err != nil {
			b.Fatal(err)
		}
		cl.snap.Jobs = append(cl.snap.Jobs, provisioner.Job{ID: id, Name: "bench", State: provisioner.StateRunning, Submit: t0, Start: t0,
			TimeLimit: time.Hour, Nodes: 1, GPUs: 8, Partition: "gpu", Comment: provisioner.ChainComment(&c, 0, 0)})
	}
	for i := 0; len(cl.snap.Jobs) < 50_000; i++ {
		j := provisioner.Job{ID: strconv.Itoa(2_000_000 + i), Name: "other", User: "u" + strconv.Itoa(i%300), Account: "a" + strconv.Itoa(i%20),
			Partition: "gpu", Submit: t0.Add(-time.Duration(i%7200) * time.Second), TimeLimit: time.Duration(1+i%48) * time.Hour, Nodes: 1 + i%4, GPUs: 8 * (1 + i%4)}
		if i%2 == 0 {
			j.State, j.Start = provisioner.StateRunning, t0.Add(-time.Duration(i%3600)*time.Second)
		} else {
			j.State, j.EstStart = provisioner.StatePending, now.Add(time.Duration(i%7200)*time.Second)
		}
		cl.snap.Jobs = append(cl.snap.Jobs, j)
	}
	for i := 0; i < 5000; i++ {
		cl.history = append(cl.history, provisioner.Job{ID: strconv.Itoa(3_000_000 + i), State: provisioner.StateCompleted,
			Submit: now.Add(-24 * time.Hour).Add(time.Duration(i) * 15 * time.Second), Start: now.Add(-23 * time.Hour).Add(time.Duration(i) * 15 * time.Second),
			End: now.Add(-22 * time.Hour).Add(time.Duration(i) * 15 * time.Second)})
	}
	eng := &provisioner.Engine{Cluster: cl, Store: st, Clock: fixed(now), Log: slog.New(slog.DiscardHandler)}
	return cl, eng
}

// BenchmarkDaemonCycle is one daemon cycle (engine step + SQLite writes)
// over 1,000 chains against a 50,000-job snapshot, on a fresh database:
// the 250 dependency chains and the 250 start-estimate chains (the queue's
// start estimates reach past their predecessors' limits) submit a
// successor each, with two commits apiece (the intent, then the job id),
// and the 500 reactive and lead chains record a wait.
func BenchmarkDaemonCycle(b *testing.B) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st, err := Open(ctx, b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		_, eng := benchSetup(b, st)
		b.StartTimer()
		rep, err := eng.Cycle(ctx)
		if err != nil || rep.Chains != 1000 || rep.Submitted() != 500 || rep.Waits != 500 {
			b.Fatalf("cycle: %d chains, %d submitted, %d waits, %v", rep.Chains, rep.Submitted(), rep.Waits, err)
		}
		b.StopTimer()
		st.Close()
		b.StartTimer()
	}
}

// BenchmarkDaemonCycleSteady is the cycle after that one: all 1,000 chains
// wait, and each wait is folded into the chain's previous wait row.
func BenchmarkDaemonCycleSteady(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	_, eng := benchSetup(b, st)
	if _, err := eng.Cycle(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Cycle(ctx); err != nil { // the dependency chains' first wait
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := eng.Cycle(ctx)
		if err != nil || rep.Chains != 1000 || rep.Waits != 1000 {
			b.Fatalf("cycle: %d chains, %d submitted, %d waits, %v", rep.Chains, rep.Submitted(), rep.Waits, err)
		}
	}
}

// BenchmarkDaemonCycleMemStore is the same cycle against MemStore: the
// engine's own cost without SQLite.
func BenchmarkDaemonCycleMemStore(b *testing.B) {
	ctx := context.Background()
	_, eng := benchSetup(b, provisioner.NewMemStore())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := eng.Cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
