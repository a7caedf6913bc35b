package realslurm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/traces"
)

// ErrPlan is wrapped by every error of a bad replay plan.
var ErrPlan = errors.New("realslurm: bad plan")

// Scale maps a trace onto the small loopback cluster: times divided by
// Factor, sizes mapped so that the slice keeps its share of the cluster.
//
// The size mapping: a trace job of n nodes holds n·TraceGPUsPerNode of the
// trace cluster's TraceNodes·TraceGPUsPerNode GPUs (the trace's partition
// allocates whole nodes); on the small cluster it holds the same share,
// g* = n·Nodes·GPUsPerNode/TraceNodes GPUs. A share below one node is a
// whole number of GPUs on one node; from one node up, whole nodes of
// GPUsPerNode GPUs each (the trace's whole-node jobs stay whole-node).
// Rounding to those sizes carries its error, in GPU-seconds of the scaled
// run time, to the next job (error diffusion in submit order), so the
// slice's GPU-seconds, hence its utilisation, are kept to within one job.
type Scale struct {
	Factor           float64 // S: trace seconds per real second (300: 48 h run 9.6 min)
	TraceNodes       int     // usable nodes of the trace's cluster (LS6: 72, the ls6 preset's count)
	TraceGPUsPerNode int     // GPUs of a trace node (LS6: 3)
	Nodes            int     // nodes of the loopback cluster
	GPUsPerNode      int     // GPUs of a loopback node (4)
}

// Validate reports a scale that cannot map anything.
func (s Scale) Validate() error {
	switch {
	case !(s.Factor >= 1) || math.IsInf(s.Factor, 0):
		return fmt.Errorf("%w: time scale %v: want ≥ 1", ErrPlan, s.Factor)
	case s.TraceNodes < 1 || s.TraceGPUsPerNode < 1:
		return fmt.Errorf("%w: trace cluster of %d nodes × %d GPUs", ErrPlan, s.TraceNodes, s.TraceGPUsPerNode)
	case s.Nodes < 1 || s.GPUsPerNode < 1:
		return fmt.Errorf("%w: loopback cluster of %d nodes × %d GPUs", ErrPlan, s.Nodes, s.GPUsPerNode)
	}
	return nil
}

// Real is a trace duration on the real cluster's clock (d / S), to the
// millisecond.
func (s Scale) Real(d time.Duration) time.Duration {
	return (time.Duration(float64(d) / s.Factor)).Round(time.Millisecond)
}

// Trace is a real duration in trace time (d · S).
func (s Scale) Trace(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.Factor)
}

// Limit is a trace time limit on the real cluster: d / S rounded up to
// whole minutes (Slurm's limits are minutes), at least one.
func (s Scale) Limit(d time.Duration) time.Duration {
	m := math.Ceil(float64(d)/s.Factor/float64(time.Minute) - 1e-9)
	return time.Duration(max(m, 1)) * time.Minute
}

// Share is g*, the GPUs on the loopback cluster holding the same share of
// it as n trace nodes hold of the trace's cluster.
func (s Scale) Share(n int) float64 {
	return float64(n) * float64(s.Nodes*s.GPUsPerNode) / float64(s.TraceNodes)
}

// BackgroundJob is one trace job as the second user submits it.
type BackgroundJob struct {
	TraceID string        // the trace's job id
	Name    string        // job name: "bg-" + TraceID (sacct finds it again by it)
	User    string        // the trace's user
	At      time.Duration // submission, after the run's start (real time)
	Limit   time.Duration // time limit (whole minutes)
	Run     time.Duration // how long it sleeps (real time, ms)
	Wait    time.Duration // its recorded wait, scaled (real time, ms)
	Nodes   int           // nodes
	GPUs    int           // GPUs in total (GPUsPerNode per node from one node up)
}

// GPUsPerNode is what the job asks of each of its nodes (sbatch --gres).
func (j *BackgroundJob) GPUsPerNode() int { return j.GPUs / max(j.Nodes, 1) }

// Plan is the background load of a run: a trace slice, scaled.
type Plan struct {
	Scale       Scale
	From, Until time.Time // the slice: trace jobs submitted in [From, Until)
	Jobs        []BackgroundJob
	// TraceGPUSeconds and GPUSeconds are the slice's GPU-seconds of run
	// time on the trace's cluster (trace time) and of the plan on the
	// loopback cluster (real time): their shares of each cluster's
	// capacity over the slice are its utilisation before and after.
	TraceGPUSeconds, GPUSeconds float64
	Skipped                     int // trace jobs of the slice that never ran (no start or end)
}

// Utilisation is the slice's GPU utilisation on the trace's cluster and of
// the plan on the loopback cluster, each over the slice's span.
func (p *Plan) Utilisation() (trace, mapped float64) {
	span := p.Until.Sub(p.From).Seconds()
	if span <= 0 {
		return 0, 0
	}
	s := p.Scale
	trace = p.TraceGPUSeconds / (span * float64(s.TraceNodes*s.TraceGPUsPerNode))
	mapped = p.GPUSeconds / (span / s.Factor * float64(s.Nodes*s.GPUsPerNode))
	return trace, mapped
}

// RunMargin is how long before its limit a background job that used its
// whole limit in the trace stops sleeping: Slurm kills a job over its
// limit only at its next check (every 30 s, up to 95 s late on 22.05),
// which would hold its GPUs far longer than the trace did.
const RunMargin = 2 * time.Second

// NewPlan scales the jobs of jobs submitted in [from, until) onto the
// cluster of s (see Scale for the mapping). Each job's run time is its
// recorded run time / S (ms), at most its scaled limit less RunMargin;
// jobs without a start or an end are counted in Skipped.
func NewPlan(jobs []traces.Job, from, until time.Time, s Scale) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !from.Before(until) {
		return nil, fmt.Errorf("%w: slice %s..%s is empty", ErrPlan, from.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	var slice []traces.Job
	p := &Plan{Scale: s, From: from, Until: until}
	for _, j := range jobs {
		if j.Submit.Before(from) || !j.Submit.Before(until) {
			continue
		}
		if j.Start.IsZero() || j.End.IsZero() || j.Runtime() < 0 {
			p.Skipped++
			continue
		}
		slice = append(slice, j)
	}
	if len(slice) == 0 {
		return nil, fmt.Errorf("%w: no job that ran was submitted in %s..%s", ErrPlan, from.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	slices.SortStableFunc(slice, func(a, b traces.Job) int { return a.Submit.Compare(b.Submit) })
	carry := 0.0 // GPU-seconds (real time) the sizes so far fall short of their shares
	for _, j := range slice {
		n := max(j.Nodes, 1)
		gpusTrace := n * s.TraceGPUsPerNode
		if j.GPUs > 0 {
			gpusTrace = j.GPUs
		}
		limit := s.Limit(j.TimeLimit)
		if j.TimeLimit <= 0 {
			limit = s.Limit(j.Runtime())
		}
		run := min(s.Real(j.Runtime()), limit-RunMargin)
		share := s.Share(n)
		gpus := s.round(share, carry, run)
		carry += (share - float64(gpus)) * run.Seconds()
		bj := BackgroundJob{TraceID: j.ID, Name: "bg-" + j.ID, User: j.User, At: s.Real(j.Submit.Sub(from)), Limit: limit, Run: run, Wait: s.Real(j.Wait()), GPUs: gpus}
		bj.Nodes = max(gpus/s.GPUsPerNode, 1)
		p.Jobs = append(p.Jobs, bj)
		p.TraceGPUSeconds += float64(gpusTrace) * j.Runtime().Seconds()
		p.GPUSeconds += float64(gpus) * run.Seconds()
	}
	return p, nil
}

// round picks the size of a job of share g* GPUs running run: the
// neighbouring size (whole GPUs below one node, whole nodes from one node
// up, at most the cluster) nearest g* plus the carried shortfall per
// second of run time.
func (s Scale) round(share, carry float64, run time.Duration) int {
	per := float64(s.GPUsPerNode)
	want := share
	if sec := run.Seconds(); sec > 0 {
		want += carry / sec
	}
	unit := 1.0 // below a node: GPUs
	if share >= per {
		unit = per // whole nodes
	}
	lo := math.Floor(share/unit) * unit
	hi := lo + unit
	if lo == share {
		hi = lo
	}
	g := lo
	if want >= (lo+hi)/2 {
		g = hi
	}
	g = max(g, 1)
	return int(min(g, float64(s.Nodes)*per))
}

// TraceJobs is the plan as a trace on the loopback cluster's clock from
// origin: what `mirage train` learns from when the slice is the training
// span (submit, start and end scaled, sizes and limits as the plan maps
// them, the recorded wait kept in scale).
func (p *Plan) TraceJobs(origin time.Time) []traces.Job {
	out := make([]traces.Job, 0, len(p.Jobs))
	for _, j := range p.Jobs {
		submit := origin.Add(j.At)
		start := submit.Add(j.Wait)
		out = append(out, traces.Job{ID: j.TraceID, Name: j.Name, User: j.User, Account: j.User, Partition: "long",
			Submit: submit, Start: start, End: start.Add(j.Run), TimeLimit: j.Limit, Nodes: j.Nodes, GPUs: j.GPUs, State: traces.StateCompleted})
	}
	return out
}

// ID is a plan job's name without its "bg-" prefix (its trace id), or ""
// for a name that is no plan job's.
func ID(name string) string {
	if len(name) > 3 && name[:3] == "bg-" {
		return name[3:]
	}
	return ""
}

// String says what the scale maps, for the page.
func (s Scale) String() string {
	return "S = " + strconv.FormatFloat(s.Factor, 'g', -1, 64) + fmt.Sprintf(" (%d × %d-GPU trace nodes onto %d × %d-GPU nodes)", s.TraceNodes, s.TraceGPUsPerNode, s.Nodes, s.GPUsPerNode)
}
