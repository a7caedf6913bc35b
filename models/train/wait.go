package train

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/xgb"
)

// WaitTrainOptions control TrainWaitPredictor.
type WaitTrainOptions struct {
	Seed   uint64                        // seed of the fits
	Params func(q float64) xgb.XGBParams // parameters per quantile (nil: DefaultQuantileParams)
	Meta   models.Meta                   // trace and windows to record
	Unit   float64                       // the target is log1p(wait/Unit) (default 60 s)
	// CalibShare is the latest share of the training jobs (by submission)
	// the p10–p90 interval is calibrated on (split conformal: see
	// TrainWaitPredictor); default ConformalShare, negative: no calibration.
	CalibShare float64
	Progress   func(stage string, done, total int) // optional
}

// DefaultWaitParams are the wait quantiles' XGBoost parameters:
// DefaultQuantileParams with depth-6 trees. Chosen on LS6 by training on
// November–December and validating on January (median absolute error on
// the jobs Slurm estimated: depth 4 / 300 rounds / min_child_weight 100:
// 941 s; depth 6: 886 s; depth 6 / 600 rounds / 20: 1158 s; depth 8 / 400
// / 50: 1089 s), before any look at February.
func DefaultWaitParams(q float64) xgb.XGBParams {
	p := xgb.DefaultQuantileParams(q)
	p.MaxDepth = 6
	return p
}

// RecordedWaitParams are the wait quantiles' parameters when they learn
// the recorded waits (`mirage train --wait-recorded`, the default): depth-4
// trees, 150 rounds. Chosen on LS6 by training before January 2023 and
// validating on January's recorded waits, before February was scored
// (median absolute error, minutes, depth/rounds/min_child_weight: 6/300/100
// 3.9; 8/300/100 4.3; 6/600/100 4.7; 6/300/20 4.2; 6/300/300 4.6; 4/300/100
// 3.4; 4/300/300 4.4; 3/300/100 3.1; 2/300/100 3.0; 4/150/100 2.3).
// December, the other month before February, has waits of seconds and
// could not tell them apart.
func RecordedWaitParams(q float64) xgb.XGBParams {
	p := xgb.DefaultQuantileParams(q)
	p.MaxDepth, p.Rounds = 4, 150
	return p
}

// WaitMetrics compares predicted waits (the p50) with simulated ones.
type WaitMetrics struct {
	N            int     `json:"n"`                          // jobs
	MedianAbsErr float64 `json:"median_abs_err_s"`           // median |predicted − simulated|, seconds
	Within10m    float64 `json:"within_10m"`                 // share with |error| ≤ 10 min
	Within1h     float64 `json:"within_1h"`                  // share with |error| ≤ 1 h
	Coverage     float64 `json:"coverage_p10_p90,omitempty"` // share of simulated waits inside [p10, p90] (the predictor only)
}

// ScoreWaits computes WaitMetrics of predictions pred (seconds) against
// simulated waits y; lo/hi (may be nil) give the interval for Coverage.
func ScoreWaits(pred, y, lo, hi []float64) WaitMetrics {
	m := WaitMetrics{N: len(y)}
	if len(y) == 0 {
		return m
	}
	errs := make([]float64, len(y))
	for i := range y {
		e := math.Abs(pred[i] - y[i])
		errs[i] = e
		if e <= 600 {
			m.Within10m++
		}
		if e <= 3600 {
			m.Within1h++
		}
		if lo != nil && y[i] >= lo[i] && y[i] <= hi[i] {
			m.Coverage++
		}
	}
	sort.Float64s(errs)
	n := float64(len(y))
	m.MedianAbsErr = features.Percentile(errs, 0.5)
	m.Within10m /= n
	m.Within1h /= n
	m.Coverage /= n
	return m
}

// WaitReport is the validation of a wait predictor against Slurm's own
// backfill estimate on the same jobs.
type WaitReport struct {
	All         WaitMetrics `json:"all"`          // the predictor on every validation job
	Estimated   WaitMetrics `json:"estimated"`    // the predictor on the jobs Slurm gave an estimate for
	Slurm       WaitMetrics `json:"slurm"`        // Slurm's estimate on those same jobs
	Queued      WaitMetrics `json:"queued"`       // the predictor on the jobs still pending after Slurm's first backfill pass
	SlurmQueued WaitMetrics `json:"slurm_queued"` // Slurm's estimate on those jobs
	NoEstimate  int         `json:"no_estimate"`  // jobs Slurm gave no estimate for (N/A in squeue --start)
}

// ConformalShare is the share of the latest training jobs the wait
// interval is calibrated on, and ConformalCoverage the coverage it is
// calibrated to. The p10–p90 interval's nominal coverage is 80 %; 85 % was
// chosen on LS6 with January 2023 as the validation month (trained before
// it, calibrated to 80 % the interval covered 63 % of January's recorded
// waits, to 85 % 81 %), before February was scored.
const (
	ConformalShare    = 0.2
	ConformalCoverage = 0.85
)

// TrainWaitPredictor fits quantile XGBoost models of the wait (p10, p50,
// p90) on log1p(wait/Unit) — quantiles are preserved by the monotone
// transform, and the log keeps the heavy tail from swamping short waits —
// and, with valid, reports them against Slurm's estimate.
//
// Quantile models fitted on the past cover less than their nominal 80 %
// of later waits (on LS6, trained before January 2023: 47 % of January's
// recorded waits). The interval is therefore calibrated by split conformal
// quantile regression: p10 and p90 are first fitted on the training jobs
// but the latest CalibShare; on those latest jobs each scores how far its
// wait falls outside its interval, s = max(p10 − z, z − p90) in the log
// target z; the interval is widened (or narrowed, when s is mostly
// negative) by the ⌈(n+1)·0.8⌉-th smallest score, which makes it cover 80 %
// of exchangeable later jobs. The models served are refitted on all the
// training jobs and keep that widening (meta.json's output shift).
func TrainWaitPredictor(train, valid *dataset.WaitData, o WaitTrainOptions) (*models.WaitPredictor, *WaitReport, error) {
	if train == nil || len(train.Samples) == 0 {
		return nil, nil, errors.New("train wait predictor: no training samples")
	}
	if err := features.CheckSchema(train.Schema, features.WaitSchema()); err != nil {
		return nil, nil, fmt.Errorf("train wait predictor: %w", err)
	}
	if o.Unit <= 0 {
		o.Unit = 60
	}
	if o.Params == nil {
		o.Params = DefaultWaitParams
	}
	ds := train.Dataset()
	for i, y := range ds.Y {
		ds.Y[i] = math.Log1p(math.Max(y, 0) / o.Unit)
	}
	if o.CalibShare == 0 {
		o.CalibShare = ConformalShare
	}
	fit := func(i int, d *models.Dataset) (models.Model, error) {
		p := o.Params(models.WaitQuantiles[i])
		p.Seed = o.Seed
		meta := o.Meta
		meta.Kind, meta.Seed = models.KindXGB, o.Seed
		m, err := xgb.TrainXGB(d, p, meta)
		if err != nil {
			return nil, fmt.Errorf("train wait predictor %s: %w", models.WaitDirs[i], err)
		}
		return m, nil
	}
	widen, calibrated := 0.0, 0
	if o.CalibShare > 0 {
		var err error
		if widen, calibrated, err = conformalWidening(train, ds, o.CalibShare, fit, o.Progress); err != nil {
			return nil, nil, err
		}
	}
	var ms [3]models.Model
	for i, q := range models.WaitQuantiles {
		if o.Progress != nil {
			o.Progress("wait quantile "+models.WaitDirs[i], i, len(models.WaitQuantiles))
		}
		m, err := fit(i, ds)
		if err != nil {
			return nil, nil, err
		}
		shift := [3]float64{-widen, 0, widen}[i]
		if err := models.UpdateMeta(m, func(mt *models.Meta) {
			if mt.Output == nil {
				mt.Output = &models.OutputTransform{Scale: 1}
			}
			mt.Output.Expm1Unit = o.Unit
			mt.Output.Shift += shift
			mt.Params["target"] = "log1p(wait/" + strconv.FormatFloat(o.Unit, 'g', -1, 64) + "s)"
			mt.Params["wait_quantile"] = strconv.FormatFloat(q, 'g', -1, 64)
			if calibrated > 0 {
				mt.Params["conformal"] = fmt.Sprintf("p10–p90 widened by %.4f in log1p(wait/unit), calibrated to %.0f %% on the latest %d training jobs",
					widen, 100*ConformalCoverage, calibrated)
			}
		}); err != nil {
			return nil, nil, err
		}
		ms[i] = m
	}
	w, err := models.NewWaitPredictor(ms[0], ms[1], ms[2])
	if err != nil {
		return nil, nil, err
	}
	if valid == nil || len(valid.Samples) == 0 {
		return w, nil, nil
	}
	rep, err := ValidateWaitPredictor(w, valid)
	if err != nil {
		return nil, nil, err
	}
	metrics := rep.Flat()
	for _, m := range w.Models {
		if err := models.UpdateMeta(m, func(mt *models.Meta) { mt.Metrics = metrics }); err != nil {
			return nil, nil, err
		}
	}
	return w, rep, nil
}

// ValidateWaitPredictor scores w on a dataset (with Slurm's estimates when recorded).
func ValidateWaitPredictor(w *models.WaitPredictor, d *dataset.WaitData) (*WaitReport, error) {
	if err := features.CheckSchema(d.Schema, features.WaitSchema()); err != nil {
		return nil, fmt.Errorf("validate wait predictor: %w", err)
	}
	n := len(d.Samples)
	var q [3][]float64
	for i, m := range w.Models {
		q[i] = make([]float64, n)
		for k := range d.Samples {
			v, err := m.Predict(d.Samples[k].X)
			if err != nil {
				return nil, err
			}
			q[i][k] = math.Max(v, 0)
		}
	}
	y := make([]float64, n)
	for k := range d.Samples {
		y[k] = d.Samples[k].Wait
		s := []float64{q[0][k], q[1][k], q[2][k]}
		sort.Float64s(s)
		q[0][k], q[1][k], q[2][k] = s[0], s[1], s[2]
	}
	rep := &WaitReport{All: ScoreWaits(q[1], y, q[0], q[2])}
	var pe, ye, se, pq, yq, sq []float64
	for k, s := range d.Samples {
		if !s.HasEst {
			rep.NoEstimate++
			continue
		}
		pe, ye, se = append(pe, q[1][k]), append(ye, y[k]), append(se, s.Est)
		if s.Queued {
			pq, yq, sq = append(pq, q[1][k]), append(yq, y[k]), append(sq, s.Est)
		}
	}
	rep.Estimated = ScoreWaits(pe, ye, nil, nil)
	rep.Slurm = ScoreWaits(se, ye, nil, nil)
	rep.Queued = ScoreWaits(pq, yq, nil, nil)
	rep.SlurmQueued = ScoreWaits(sq, yq, nil, nil)
	return rep, nil
}

// Flat renders the report as meta.json metrics.
func (r *WaitReport) Flat() map[string]float64 {
	out := map[string]float64{"valid_no_estimate": float64(r.NoEstimate)}
	put := func(p string, m WaitMetrics) {
		out[p+"n"] = float64(m.N)
		out[p+"median_abs_err_s"] = m.MedianAbsErr
		out[p+"within_10m"] = m.Within10m
		out[p+"within_1h"] = m.Within1h
	}
	put("valid_", r.All)
	out["valid_coverage_p10_p90"] = r.All.Coverage
	put("valid_estimated_", r.Estimated)
	put("valid_slurm_", r.Slurm)
	put("valid_queued_", r.Queued)
	put("valid_slurm_queued_", r.SlurmQueued)
	return out
}

// conformalWidening fits p10 and p90 on the training jobs submitted before
// the latest share and returns the split-conformal widening of their
// interval on the latest ones (see TrainWaitPredictor), in ds's log target,
// with the number of jobs it was calibrated on. ds holds the samples of
// train in order with the log target.
func conformalWidening(train *dataset.WaitData, ds *models.Dataset, share float64,
	fit func(int, *models.Dataset) (models.Model, error), progress func(string, int, int)) (float64, int, error) {
	subs := make([]int64, len(train.Samples))
	for i, s := range train.Samples {
		subs[i] = s.Submit.UnixNano()
	}
	sorted := slices.Clone(subs)
	slices.Sort(sorted)
	cut := sorted[min(len(sorted)-1, int(float64(len(sorted))*(1-share)))]
	early := &models.Dataset{Schema: ds.Schema}
	var calibX [][]float64
	var calibY []float64
	for i := range subs {
		if subs[i] < cut {
			early.X, early.Y = append(early.X, ds.X[i]), append(early.Y, ds.Y[i])
		} else {
			calibX, calibY = append(calibX, ds.X[i]), append(calibY, ds.Y[i])
		}
	}
	if len(early.Y) < 100 || len(calibY) < 30 {
		return 0, 0, nil // too few to calibrate on: the interval stays as fitted
	}
	var lo, hi models.Model
	for k, i := range []int{0, 2} {
		if progress != nil {
			progress("wait interval calibration", k, 2)
		}
		m, err := fit(i, early)
		if err != nil {
			return 0, 0, err
		}
		if i == 0 {
			lo = m
		} else {
			hi = m
		}
	}
	scores := make([]float64, len(calibY))
	for k, x := range calibX {
		l, err := lo.Predict(x)
		if err != nil {
			return 0, 0, err
		}
		h, err := hi.Predict(x)
		if err != nil {
			return 0, 0, err
		}
		l, h = min(l, h), max(l, h)
		scores[k] = max(l-calibY[k], calibY[k]-h)
	}
	return conformalQuantile(scores, ConformalCoverage), len(scores), nil
}

// conformalQuantile is split conformal's threshold: the ⌈(n+1)·coverage⌉-th
// smallest of n scores (the largest when that rank passes n). It sorts
// scores.
func conformalQuantile(scores []float64, coverage float64) float64 {
	slices.Sort(scores)
	n := len(scores)
	k := min(n, int(math.Ceil(float64(n+1)*coverage)))
	return scores[max(k, 1)-1]
}
