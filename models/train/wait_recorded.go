package train

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// Wait prediction against what really happened. ValidateWaitPredictor
// scores the predictor against the simulator's own waits; this scores it
// against the waits the trace recorded, next to baselines a site could
// compute from the same accounting history:
//
//   - history median: the median recorded wait of the last HistoryJobs jobs
//     of the same size group (1, 2–4, 5–8, > 8 nodes) that had started
//     before the job was submitted; its p10–p90 as an interval;
//   - QBETS: the 95%-confidence upper bound on the median of those waits
//     (models.QBETSBound), QBETS's point answer;
//   - the simulator: the job's wait in the replay that produced the
//     features (what `mirage sim` says), and Slurm's own estimate in that
//     replay (squeue --start after its first backfill pass).
//
// The predictor sees the cluster as the simulator replays it up to the
// job's submission (as `mirage predict-wait --trace --at` does): the trace
// records no queue snapshots, so the queue features come from the replay
// (the history features too, unless the predictor learned from the
// recorded history: then from the recorded jobs), and the answer is
// scored against the recorded wait. Jobs with recorded
// holds (sim.Holds) are left out: their recorded wait includes the hold.

// HistoryJobs is how many earlier starts of the same size group the
// history baselines look at.
const HistoryJobs = 100

// RecordedWaitReport compares wait predictions with recorded waits.
type RecordedWaitReport struct {
	From, Until   time.Time           `json:"-"`
	Jobs          int                 `json:"jobs"`           // jobs scored
	Excluded      int                 `json:"excluded_holds"` // jobs left out for a recorded hold
	Predictor     WaitMetrics         `json:"predictor"`      // p50, and p10–p90 coverage
	HistoryMedian WaitMetrics         `json:"history_median"` // and its p10–p90 coverage
	QBETS         WaitMetrics         `json:"qbets"`
	Simulator     WaitMetrics         `json:"simulator"`      // the replay's own wait
	SlurmEstimate WaitMetrics         `json:"slurm_estimate"` // on the jobs the replay's Slurm gave one for
	Groups        []RecordedWaitGroup `json:"groups"`         // the same by size group
}

// RecordedWaitGroup is RecordedWaitReport's figures for one size group.
type RecordedWaitGroup struct {
	Group         string      `json:"group"`
	Predictor     WaitMetrics `json:"predictor"`
	HistoryMedian WaitMetrics `json:"history_median"`
	QBETS         WaitMetrics `json:"qbets"`
	Simulator     WaitMetrics `json:"simulator"`
}

// sizeGroup names a node count's group, as the fidelity report does.
func sizeGroup(nodes int) string {
	switch {
	case nodes <= 1:
		return "1 node"
	case nodes <= 4:
		return "2-4 nodes"
	case nodes <= 8:
		return "5-8 nodes"
	}
	return ">8 nodes"
}

// ValidateAgainstRecorded scores w on the jobs of sc submitted in
// [from, until) against their recorded waits (see the comment above).
// sc must have been built with its recorded jobs (scenario.NewScenario).
func ValidateAgainstRecorded(ctx context.Context, sc *scenario.Scenario, w *models.WaitPredictor, from, until time.Time) (*RecordedWaitReport, error) {
	if len(sc.Jobs) == 0 {
		return nil, fmt.Errorf("recorded waits: scenario %s has no recorded jobs", sc.Name)
	}
	d, err := dataset.GenerateWaitData(ctx, sc, dataset.WaitGenOptions{From: from, Until: until, Estimates: true, RecordedHistory: w.RecordedHistory()})
	if err != nil {
		return nil, err
	}
	reason, _ := sim.Holds(sc.Jobs, sim.HoldOptions{Nodes: len(sc.Config.Nodes)})
	held := map[*traces.Job]bool{}
	for i := range sc.Jobs {
		if reason[i] != sim.HoldNone {
			held[&sc.Jobs[i]] = true
		}
	}
	hist := newStartHistory(sc.Jobs, reason)
	type row struct {
		group              string
		rec, sim           float64
		p10, p50, p90      float64
		med, lo, hi, qbets float64
		est                float64
		hasEst, hasHistory bool
	}
	var rows []row
	rep := &RecordedWaitReport{From: from, Until: until}
	for _, s := range d.Samples {
		j := sc.Recorded(s.ID)
		if j == nil || j.Start.IsZero() {
			continue
		}
		if held[j] {
			rep.Excluded++
			continue
		}
		r := row{group: sizeGroup(j.Nodes), rec: j.Wait().Seconds(), sim: s.Wait, est: s.Est, hasEst: s.HasEst}
		q := make([]float64, 3)
		for i, m := range w.Models {
			if q[i], err = m.Predict(s.X); err != nil {
				return nil, fmt.Errorf("recorded waits: job %s: %w", s.ID, err)
			}
			q[i] = max(q[i], 0)
		}
		slices.Sort(q)
		r.p10, r.p50, r.p90 = q[0], q[1], q[2]
		r.med, r.lo, r.hi, r.qbets, r.hasHistory = hist.at(j.Submit, r.group)
		rows = append(rows, r)
	}
	score := func(keep func(row) bool) (pred, med, qb, simw WaitMetrics) {
		var y, p, lo, hi, m, mlo, mhi, qv, sv []float64
		for _, r := range rows {
			if !keep(r) {
				continue
			}
			y, p, lo, hi = append(y, r.rec), append(p, r.p50), append(lo, r.p10), append(hi, r.p90)
			m, mlo, mhi, qv, sv = append(m, r.med), append(mlo, r.lo), append(mhi, r.hi), append(qv, r.qbets), append(sv, r.sim)
		}
		return ScoreWaits(p, y, lo, hi), ScoreWaits(m, y, mlo, mhi), ScoreWaits(qv, y, nil, nil), ScoreWaits(sv, y, nil, nil)
	}
	rep.Predictor, rep.HistoryMedian, rep.QBETS, rep.Simulator = score(func(r row) bool { return r.hasHistory })
	rep.Jobs = rep.Predictor.N
	var ey, ev []float64
	for _, r := range rows {
		if r.hasHistory && r.hasEst {
			ey, ev = append(ey, r.rec), append(ev, r.est)
		}
	}
	rep.SlurmEstimate = ScoreWaits(ev, ey, nil, nil)
	for _, g := range []string{"1 node", "2-4 nodes", "5-8 nodes", ">8 nodes"} {
		gr := RecordedWaitGroup{Group: g}
		gr.Predictor, gr.HistoryMedian, gr.QBETS, gr.Simulator = score(func(r row) bool { return r.hasHistory && r.group == g })
		rep.Groups = append(rep.Groups, gr)
	}
	return rep, nil
}

// startHistory answers the history baselines: the recorded waits of the
// jobs (without holds) in start order, by size group.
type startHistory struct {
	byGroup map[string][]histStart
}

type histStart struct {
	start time.Time
	wait  float64
}

func newStartHistory(jobs []traces.Job, reason []string) *startHistory {
	h := &startHistory{byGroup: map[string][]histStart{}}
	for i := range jobs {
		j := &jobs[i]
		if j.Start.IsZero() || j.Submit.IsZero() || reason[i] != sim.HoldNone {
			continue
		}
		g := sizeGroup(j.Nodes)
		h.byGroup[g] = append(h.byGroup[g], histStart{j.Start, j.Wait().Seconds()})
	}
	for _, l := range h.byGroup {
		slices.SortStableFunc(l, func(a, b histStart) int { return a.start.Compare(b.start) })
	}
	return h
}

// at returns, from the last HistoryJobs jobs of group that started before
// t, the median wait, its p10 and p90, and QBETS's 95%-confidence upper
// bound on the median; ok is false with fewer than 10 such jobs.
func (h *startHistory) at(t time.Time, group string) (med, lo, hi, qbets float64, ok bool) {
	l := h.byGroup[group]
	k, _ := slices.BinarySearchFunc(l, t, func(e histStart, t time.Time) int { return e.start.Compare(t) })
	w := make([]float64, 0, HistoryJobs)
	for _, e := range l[max(0, k-HistoryJobs):k] {
		w = append(w, e.wait)
	}
	if len(w) < 10 {
		return 0, 0, 0, 0, false
	}
	slices.Sort(w)
	b := models.QBETSBound(len(w), 0.5, 0.95)
	return features.Percentile(w, 0.5), features.Percentile(w, 0.1), features.Percentile(w, 0.9), w[min(b, len(w))-1], true
}

// RelabelRecorded returns d with each sample's wait replaced by the wait
// its job recorded; samples of jobs with a recorded hold (sim.Holds), or
// that sc cannot match to a recorded job that started, are dropped. The
// features stay the replay's: a predictor trained on the result learns
// what really happened from what the simulator shows.
func RelabelRecorded(sc *scenario.Scenario, d *dataset.WaitData) *dataset.WaitData {
	reason, _ := sim.Holds(sc.Jobs, sim.HoldOptions{Nodes: len(sc.Config.Nodes)})
	held := map[*traces.Job]bool{}
	for i := range sc.Jobs {
		if reason[i] != sim.HoldNone {
			held[&sc.Jobs[i]] = true
		}
	}
	out := *d
	out.Samples = nil
	for _, s := range d.Samples {
		j := sc.Recorded(s.ID)
		if j == nil || j.Start.IsZero() || held[j] {
			continue
		}
		s.Wait, s.Censored = j.Wait().Seconds(), false
		out.Samples = append(out.Samples, s)
	}
	return &out
}
