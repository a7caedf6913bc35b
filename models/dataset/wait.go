package dataset

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// WaitSample is one recorded job's submission as the wait predictor sees
// it: the features of the cluster just before the job arrived (the job as
// the successor, no predecessor) and its simulated wait.
type WaitSample struct {
	ID       string        // job id
	Submit   time.Time     // (simulated) submission
	Nodes    int           // nodes
	GPUs     int           // GPUs
	Limit    time.Duration // time limit
	X        []float64     // features (WaitObservation)
	Wait     float64       // simulated wait, seconds (the horizon when censored)
	Censored bool          // not started by the end of the replay
	Est      float64       // Slurm's own estimate of the wait after its first backfill pass, seconds (valid when HasEst)
	HasEst   bool          // the scheduler had started it or planned a start (squeue --start would show one)
	Queued   bool          // still pending after the first backfill pass (with or without an estimate)
}

// WaitData is a wait-prediction dataset from one scenario and window.
type WaitData struct {
	Schema  features.SchemaID // feature schema of X
	Trace   string            // scenario name
	From    time.Time         // submissions at or after
	Until   time.Time         // submissions before
	Samples []WaitSample      // in submission order
	Seconds float64           // wall time of the generation
}

// WaitGenOptions control GenerateWaitData.
type WaitGenOptions struct {
	From      time.Time     // submissions at or after (zero: all)
	Until     time.Time     // submissions before (zero: all)
	Estimates bool          // also record Slurm's backfill estimate (one short fork per job)
	History   time.Duration // Observation.History window (default 24 h)
	// RecordedHistory takes Observation.History from the scenario's
	// recorded jobs (what sacct showed at that instant,
	// scenario.RecordedHistory) instead of from the replay: for a
	// predictor that learns the recorded waits, as a live cluster's sacct
	// will show it. The queue snapshot stays the replay's.
	RecordedHistory bool
	Progress        func(done, total int) // optional, on the calling goroutine
}

// WaitRequest is the submission a recorded job stands for (the job as a wait sample frames it).
func WaitRequest(sp *sim.JobSpec) provisioner.SubmitRequest {
	acct := sp.Account
	if acct == "" {
		acct = sp.User
	}
	return provisioner.SubmitRequest{Name: sp.Name, Account: acct, Partition: sp.Partition, TimeLimit: sp.TimeLimit, Nodes: max(sp.Nodes, 1), GPUs: sp.GPUs}
}

// GenerateWaitData replays the scenario once and, for every job submitted
// in the window, records the features one second before it arrives (the
// job as the would-be submission of WaitObservation: no predecessor), its
// simulated wait and, with Estimates, what Slurm's backfill planned for it
// right after its first backfill pass (a fork run to submit + bf_interval
// + the scheduling latency + 2 s): its start when it had started by then,
// its planned start when it was pending with one, none otherwise. The
// replay is deterministic, so the dataset is too.
func GenerateWaitData(ctx context.Context, sc *scenario.Scenario, o WaitGenOptions) (*WaitData, error) {
	start := time.Now() // wall time, reported only
	if o.History <= 0 {
		o.History = provisioner.DefaultHistoryWindow
	}
	var specs []*sim.JobSpec
	for i := range sc.Specs {
		sp := &sc.Specs[i]
		if (o.From.IsZero() || !sp.Submit.Before(o.From)) && (o.Until.IsZero() || sp.Submit.Before(o.Until)) {
			specs = append(specs, sp)
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("wait dataset: no jobs of %s submitted in [%s, %s)", sc.Name, fmtTime(o.From), fmtTime(o.Until))
	}
	slices.SortStableFunc(specs, func(a, b *sim.JobSpec) int { return a.Submit.Compare(b.Submit) })
	var recorded *scenario.RecordedHistory
	if o.RecordedHistory {
		if len(sc.Jobs) == 0 {
			return nil, fmt.Errorf("wait dataset: the recorded history needs the recorded jobs of %s", sc.Name)
		}
		recorded = scenario.NewRecordedHistory(sc.Jobs)
	}
	s, err := sc.NewSim()
	if err != nil {
		return nil, err
	}
	cfg := sc.Config
	settle := cfg.BFInterval + cfg.SchedLatency + 2*time.Second
	out := &WaitData{Schema: features.WaitSchema(), Trace: sc.Name, From: o.From, Until: o.Until, Samples: make([]WaitSample, len(specs))}
	var lastAt time.Time
	var obsSnap *provisioner.Snapshot
	var obsHist []provisioner.Job
	for i, sp := range specs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at := sp.Submit.Add(-time.Second)
		if !at.Equal(lastAt) {
			if at.After(s.Now()) {
				s.Run(at)
			}
			if obsSnap, err = s.Snapshot(ctx); err != nil {
				return nil, err
			}
			if recorded != nil {
				obsHist = recorded.At(at, at.Add(-o.History))
			} else {
				obsHist = s.History(at.Add(-o.History))
			}
			lastAt = at
		}
		req := WaitRequest(sp)
		x, err := features.WaitFeatures(features.WaitObservation(at, obsSnap, obsHist, req))
		if err != nil {
			return nil, err
		}
		ws := WaitSample{ID: sp.ID, Submit: sp.Submit, Nodes: req.Nodes, GPUs: sp.GPUs, Limit: sp.TimeLimit, X: x}
		if o.Estimates {
			f := s.Fork()
			f.Run(sp.Submit.Add(settle))
			snap, err := f.Snapshot(ctx)
			if err != nil {
				return nil, err
			}
			if j := snap.Job(sp.ID); j != nil {
				ws.Queued = j.State == provisioner.StatePending
				switch {
				case !j.Start.IsZero():
					ws.Est, ws.HasEst = j.Start.Sub(sp.Submit).Seconds(), true
				case !j.EstStart.IsZero():
					ws.Est, ws.HasEst = math.Max(0, j.EstStart.Sub(sp.Submit).Seconds()), true
				}
			} else if r, err := f.Result(sp.ID); err == nil && !r.Start.IsZero() {
				ws.Est, ws.HasEst = r.Start.Sub(sp.Submit).Seconds(), true // started and already ended
			}
		}
		out.Samples[i] = ws
		if o.Progress != nil && (i%256 == 0 || i == len(specs)-1) {
			o.Progress(i+1, len(specs))
		}
	}
	s.Run(time.Time{})
	for i, sp := range specs {
		r, err := s.Result(sp.ID)
		if err != nil {
			return nil, err
		}
		if r.Start.IsZero() {
			out.Samples[i].Wait, out.Samples[i].Censored = s.Now().Sub(sp.Submit).Seconds(), true
			continue
		}
		out.Samples[i].Wait = r.Start.Sub(sp.Submit).Seconds()
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// Dataset returns the samples as a design matrix with the wait (seconds) as target.
func (d *WaitData) Dataset() *models.Dataset {
	ds := &models.Dataset{Schema: d.Schema, X: make([][]float64, len(d.Samples)), Y: make([]float64, len(d.Samples))}
	for i := range d.Samples {
		ds.X[i], ds.Y[i] = d.Samples[i].X, d.Samples[i].Wait
	}
	return ds
}

// GenerateWaitReplicas generates the wait dataset of replicas replays of
// the scenario, with simulator seeds sc.Config.Seed, +1, …, concurrently
// on up to workers goroutines (≤ 0: one per replica), and returns their
// samples concatenated in replica order. Each replay is deterministic, so
// the result is too. The replicas differ only where the latency draws
// change the schedule: training on several keeps a predictor from fitting
// one replay's accidents (on LS6 with the wait schema, February
// validation, seeds 1–5: one replay gave 2.71–3.81× lower median error
// than Slurm's estimate, five replays 3.00–3.63×). With more than one
// replica, o.Progress is called from the worker goroutines, serialised
// (as GenerateChainData does), with the jobs of every replica.
func GenerateWaitReplicas(ctx context.Context, sc *scenario.Scenario, o WaitGenOptions, replicas, workers int) (*WaitData, error) {
	if replicas <= 1 {
		return GenerateWaitData(ctx, sc, o)
	}
	if workers <= 0 || workers > replicas {
		workers = replicas
	}
	start := time.Now() // wall time, reported only
	parts := make([]*WaitData, replicas)
	errs := make([]error, replicas)
	done := make([]int, replicas) // jobs done per replica, for progress
	var progMu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				ro := o
				if o.Progress != nil {
					ro.Progress = func(d, total int) {
						progMu.Lock()
						defer progMu.Unlock()
						done[k] = d
						sum := 0
						for _, n := range done {
							sum += n
						}
						o.Progress(sum, total*replicas) // every replica has the same jobs
					}
				}
				parts[k], errs[k] = GenerateWaitData(ctx, sc.WithSeed(sc.Config.Seed+uint64(k)), ro)
			}
		}()
	}
feed:
	for k := range replicas {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("wait replica %d: %w", k, err)
		}
	}
	out := *parts[0]
	out.Samples = nil
	for _, p := range parts {
		out.Samples = append(out.Samples, p.Samples...)
	}
	out.Seconds = time.Since(start).Seconds()
	return &out, nil
}
