// Package testobs holds the fixtures that the tests of several models
// packages share: a hand-checked observation with its job and node builders,
// and a synthetic regression/classification set. It imports only the
// provisioner, so any models package's own tests may use it.
package testobs

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// T0 is the fixed "now" of the test observations.
var T0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// JobBuilder builds a provisioner.Job relative to T0.
type JobBuilder struct{ j provisioner.Job }

// Job starts a one-node job.
func Job(id string) *JobBuilder { return &JobBuilder{provisioner.Job{ID: id, Nodes: 1}} }

// Pending sets the job's fields.
func (b *JobBuilder) Pending(submitAgo time.Duration) *JobBuilder {
	b.j.State, b.j.Submit = provisioner.StatePending, T0.Add(-submitAgo)
	return b
}

// Running sets the job's fields.
func (b *JobBuilder) Running(submitAgo, startAgo time.Duration) *JobBuilder {
	b.j.State, b.j.Submit, b.j.Start = provisioner.StateRunning, T0.Add(-submitAgo), T0.Add(-startAgo)
	return b
}

// Limit sets the job's fields.
func (b *JobBuilder) Limit(d time.Duration) *JobBuilder { b.j.TimeLimit = d; return b }

// Nodes sets the job's fields.
func (b *JobBuilder) Nodes(n, gpus int) *JobBuilder { b.j.Nodes, b.j.GPUs = n, gpus; return b }

// Acct sets the job's fields.
func (b *JobBuilder) Acct(a, part string) *JobBuilder {
	b.j.Account, b.j.Partition = a, part
	return b
}

// Build sets the job's fields.
func (b *JobBuilder) Build() provisioner.Job { return b.j }

// Node is a node with 64 CPUs.
func Node(name string, st provisioner.NodeState, gpus, used, cpusUsed int) provisioner.Node {
	return provisioner.Node{Name: name, State: st, GPUs: gpus, GPUsUsed: used, CPUs: 64, CPUsUsed: cpusUsed}
}

// Hour is time.Hour, short for the tables.
const Hour = time.Hour

// Observation is a small hand-checked cluster state: four nodes (one
// drained), three pending and two running jobs, a five-job history and a
// running predecessor (r1) of a one-node chain.
func Observation() *provisioner.Observation {
	snap := &provisioner.Snapshot{
		Time: T0,
		Nodes: []provisioner.Node{
			Node("n1", provisioner.NodeUp, 4, 4, 10),
			Node("n2", provisioner.NodeUp, 8, 8, 10),
			Node("n3", provisioner.NodeUp, 8, 0, 0),
			Node("n4", provisioner.NodeDrained, 8, 0, 0),
		},
		Jobs: []provisioner.Job{
			Job("p1").Pending(1*Hour).Limit(2*Hour).Nodes(1, 4).Acct("A", "gpu").Build(),
			Job("p2").Pending(3*Hour).Limit(4*Hour).Nodes(2, 8).Acct("B", "gpu").Build(),
			Job("p3").Pending(2*Hour).Limit(10*Hour).Nodes(1, 0).Acct("A", "cpu").Build(),
			Job("r1").Running(5*Hour, 4*Hour).Limit(6*Hour).Nodes(1, 4).Acct("A", "gpu").Build(),
			Job("r2").Running(10*Hour, 2*Hour).Limit(48*Hour).Nodes(2, 8).Acct("B", "gpu").Build(),
		},
	}
	hist := []provisioner.Job{
		Job("h1").Running(30*Hour, 28*Hour).Build(),        // wait 2 h, started > 24 h ago
		Job("h2").Running(5*Hour, 4*Hour).Build(),          // wait 1 h
		Job("h3").Running(3*Hour, 150*time.Minute).Build(), // wait 0.5 h
		Job("h4").Pending(3 * Hour).Build(),                // never started: ignored
		Job("h5").Running(1*Hour, -1*Hour).Build(),         // starts in the future: ignored
	}
	// Scheduler estimates (squeue --start): p1 in 1.5 h, p2 in 3 h.
	snap.Jobs[0].EstStart = T0.Add(90 * time.Minute)
	snap.Jobs[1].EstStart = T0.Add(3 * Hour)
	pred := snap.Job("r1")
	return provisioner.Observe(T0, snap, hist, &provisioner.Chain{Account: "A", Partition: "gpu", TimeLimit: 6 * Hour}, pred,
		provisioner.SubmitRequest{Nodes: 1, GPUs: 4}, nil)
}

// Synth returns n rows of w ≥ 5 features (the first three integer-valued, as
// counts are, so ties with split thresholds happen), a regression target and
// a 0/1 target derived from it, deterministically for seed.
func Synth(n, w int, seed uint64) (X [][]float64, yReg, yCls []float64) {
	r := rand.New(rand.NewPCG(seed, 0x6d697261))
	X = make([][]float64, n)
	yReg = make([]float64, n)
	yCls = make([]float64, n)
	for i := range X {
		row := make([]float64, w)
		for j := range row {
			if j < 3 {
				row[j] = float64(r.IntN(21))
			} else {
				row[j] = r.NormFloat64()
			}
		}
		y := 3*row[0] - 2*row[1] + 4*row[3]*row[4] + 10*b2f(row[2] > 10) + r.NormFloat64()
		X[i], yReg[i] = row, y
		// Classification: noisy threshold on the same signal (about 50/50).
		if y+2*r.NormFloat64() > 10 {
			yCls[i] = 1
		}
	}
	return X, yReg, yCls
}

// Fields names w synthetic features x0, x1, ….
func Fields(w int) []string {
	f := make([]string, w)
	for i := range f {
		f[i] = "x" + strconv.Itoa(i)
	}
	return f
}

// LogLoss is the mean binary cross-entropy of probabilities p for 0/1 labels y.
func LogLoss(p, y []float64) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	s := 0.0
	for i := range y {
		q := math.Min(math.Max(p[i], 1e-12), 1-1e-12)
		if y[i] >= 0.5 {
			s -= math.Log(q)
		} else {
			s -= math.Log(1 - q)
		}
	}
	return s / float64(len(y))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
