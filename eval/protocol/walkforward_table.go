package protocol

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
)

// WFRow is one line of the walk-forward table: a policy's hand-offs of one
// load class, pooled over the folds.
type WFRow struct {
	Class        string     `json:"class"` // all, low, medium, heavy
	Policy       string     `json:"policy"`
	N            int        `json:"n"`
	MeanAbsGap   float64    `json:"mean_abs_gap_h"`
	MeanOverlap  float64    `json:"mean_overlap_h"`
	MeanIntr     float64    `json:"mean_interruption_h"`
	VsReactive   float64    `json:"vs_reactive"`          // mean |gap| / reactive's on the same hand-offs
	VsReactive95 [2]float64 `json:"vs_reactive_95"`       // paired percentile bootstrap
	VsOracle     float64    `json:"vs_oracle"`            // mean |gap| / the oracle's
	PerFold      []float64  `json:"per_fold_vs_reactive"` // VsReactive of each fold (NaN: no hand-off of the class)
}

// MarshalJSON writes a ratio without a denominator (NaN: e.g. a class
// the oracle has no gap in, or a fold without hand-offs of the class) as
// null, which JSON can carry and NaN cannot.
func (r WFRow) MarshalJSON() ([]byte, error) {
	type row struct {
		Class        string       `json:"class"`
		Policy       string       `json:"policy"`
		N            int          `json:"n"`
		MeanAbsGap   float64      `json:"mean_abs_gap_h"`
		MeanOverlap  float64      `json:"mean_overlap_h"`
		MeanIntr     float64      `json:"mean_interruption_h"`
		VsReactive   nullFloat    `json:"vs_reactive"`
		VsReactive95 [2]nullFloat `json:"vs_reactive_95"`
		VsOracle     nullFloat    `json:"vs_oracle"`
		PerFold      []nullFloat  `json:"per_fold_vs_reactive"`
	}
	out := row{Class: r.Class, Policy: r.Policy, N: r.N, MeanAbsGap: r.MeanAbsGap, MeanOverlap: r.MeanOverlap, MeanIntr: r.MeanIntr,
		VsReactive: nullFloat(r.VsReactive), VsReactive95: [2]nullFloat{nullFloat(r.VsReactive95[0]), nullFloat(r.VsReactive95[1])}, VsOracle: nullFloat(r.VsOracle)}
	for _, v := range r.PerFold {
		out.PerFold = append(out.PerFold, nullFloat(v))
	}
	return json.Marshal(out)
}

// nullFloat is a float64 that JSON-encodes NaN and ±Inf as null.
type nullFloat float64

func (f nullFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// WalkForwardRows pools walk-forward outcomes by load class (by the
// deadline submission's gap: ≤ 2 h low, ≤ 12 h medium, else heavy) and
// policy. Ratios pair each hand-off with the reactive and oracle outcomes
// of the same chain; the interval resamples hand-offs (resamples draws,
// seeded by seed and the row).
func WalkForwardRows(outs []WFOutcome, folds int, resamples int, seed uint64) []WFRow {
	type key struct {
		fold   int
		inject time.Time
		nodes  int
	}
	ref := map[string]map[key]float64{WFReactive: {}, WFOracle: {}}
	var policies []string
	for _, o := range outs {
		if !slices.Contains(policies, o.Policy) {
			policies = append(policies, o.Policy)
		}
		if m, ok := ref[o.Policy]; ok {
			m[key{o.Fold, o.Inject, o.Nodes}] = math.Abs(o.Gap) / 3600
		}
	}
	var rows []WFRow
	for _, class := range []string{"all", "low", "medium", "heavy"} {
		for _, p := range policies {
			var abs, react, orac []float64
			var fold []int
			r := WFRow{Class: class, Policy: p}
			for _, o := range outs {
				if o.Policy != p || (class != "all" && dataset.ReactiveLoad(&dataset.ChainEpisode{Reactive: o.Reactive}) != class) {
					continue
				}
				k := key{o.Fold, o.Inject, o.Nodes}
				abs = append(abs, math.Abs(o.Gap)/3600)
				react = append(react, ref[WFReactive][k])
				orac = append(orac, ref[WFOracle][k])
				fold = append(fold, o.Fold)
				r.MeanOverlap += math.Max(-o.Gap, 0) / 3600
				r.MeanIntr += math.Max(o.Gap, 0) / 3600
			}
			r.N = len(abs)
			if r.N == 0 {
				continue
			}
			n := float64(r.N)
			r.MeanAbsGap, r.MeanOverlap, r.MeanIntr = sum(abs)/n, r.MeanOverlap/n, r.MeanIntr/n
			r.VsReactive, r.VsOracle = ratio(sum(abs), sum(react)), ratio(sum(abs), sum(orac))
			for f := range folds {
				var a, b float64
				for i := range abs {
					if fold[i] == f {
						a, b = a+abs[i], b+react[i]
					}
				}
				r.PerFold = append(r.PerFold, ratio(a, b))
			}
			rng := rand.New(rand.NewPCG(seed, uint64(len(rows))+1))
			rs := make([]float64, 0, resamples)
			for range resamples {
				var a, b float64
				for range r.N {
					j := rng.IntN(r.N)
					a, b = a+abs[j], b+react[j]
				}
				if b > 0 {
					rs = append(rs, a/b)
				}
			}
			if len(rs) > 0 {
				sort.Float64s(rs)
				r.VsReactive95 = [2]float64{features.Percentile(rs, 0.025), features.Percentile(rs, 0.975)}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// WriteWalkForwardTable writes rows as a markdown table; foldNames head the per-fold columns.
func WriteWalkForwardTable(w io.Writer, rows []WFRow, foldNames []string) error {
	head := "| class | policy | n | mean \\|gap\\| (h) | mean overlap (h) | mean interruption (h) | × reactive | 95% CI | × oracle |"
	sep := "|---|---|---|---|---|---|---|---|---|"
	for _, f := range foldNames {
		head += " × reactive " + f + " |"
		sep += "---|"
	}
	if _, err := fmt.Fprintln(w, head+"\n"+sep); err != nil {
		return err
	}
	for _, r := range rows {
		line := fmt.Sprintf("| %s | %s | %d | %.2f | %.2f | %.2f | %s | %s–%s | %s |", r.Class, r.Policy, r.N, r.MeanAbsGap, r.MeanOverlap, r.MeanIntr,
			fmtRatio(r.VsReactive), fmtRatio(r.VsReactive95[0]), fmtRatio(r.VsReactive95[1]), fmtRatio(r.VsOracle))
		for _, v := range r.PerFold {
			line += " " + fmtRatio(v) + " |"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteText prints the folds, the pooled table and the pick.
func (r *WFResult) WriteText(w io.Writer) error {
	var names []string
	for _, fd := range r.Folds {
		names = append(names, fd.Start.Format("2006-01-02"))
		fmt.Fprintf(w, "period %s .. %s: %d chains scored, %d to train on\n", fd.Start.Format("2006-01-02"), fd.End.Format("2006-01-02"), fd.Scored, fd.Train)
	}
	fmt.Fprintln(w)
	if err := WriteWalkForwardTable(w, r.Rows, names); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nlowest pooled mean |gap|: %s; of the policies mirage submit runs: %s\n", r.Best, r.Pick)
	return err
}
