package eval

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// The site grid (issue 45): every default candidate scored under each cell
// of sim.SiteGrid (and the calibrated preset), by two walk-forwards per
// cell: one over a ranking period before the scored months, with the
// trace's arrivals there scaled to the scored months' demand (a quiet
// month ranks nothing), which ranks the candidates for the cell's class
// (RankSite: the ranking mirage submit's default reads, models.SiteRanking);
// and one over the scored months as recorded. A cell is one preset and one
// process: RunGridCell's result is written to a file of its own
// (WriteGridCell), so that cells may run as separate processes or job-array
// tasks (`mirage eval site-grid --cell NAME`) and be read back together.

// Grid candidates: the policies a cell's walk-forward scores besides
// reactive and the oracle. GridTable are scored on the chain tables
// (refitted as the walk-forward does), GridReplayed replayed through the
// engine with a model fitted at each period's start, GridBaselines
// replayed without a model. Together they are the candidates for a
// chain's default: the default learned policy deciding when to submit
// (xgb-online) and its pinned form; and without a model, pin and
// dependency (submitted at once, held by the scheduler until the
// predecessor ends: it never overlaps, and starts at once where nodes are
// free, where a submission at the deadline waits a scheduling pass).
var (
	GridTable     = []string{train.OnlinePolicyName}
	GridReplayed  = []string{models.DefaultPinned}
	GridBaselines = []string{provisioner.PolicyPin, provisioner.PolicyDependency}
)

// GridCandidates are the policies the ranking orders: every grid policy
// but the table baselines.
func GridCandidates() []string {
	return slices.Concat(GridBaselines, GridTable, GridReplayed)
}

// GridSpec is what every cell of a grid shares: the trace, the ranking
// period [Rank, Scored[0]) with its arrivals scaled by RankScale, the
// scored periods (Scored: their starts, then the end of the last), the
// refit cadence, the seed and the chain table cache.
type GridSpec struct {
	Jobs      []traces.Job
	TraceName string
	Rank      time.Time
	RankScale float64 // scenario.Scaled of the ranking run (≤ 1: as recorded)
	Scored    []time.Time
	Retrain   time.Duration
	Seed      uint64
	Cache     string
	Workers   int
	Progress  train.Progress
}

// GridCellResult is one cell's walk-forwards: the rows of its ranking
// period and of its scored periods (PerFold: each scored period), the
// outcomes they pool (for paired comparisons), and what it took.
type GridCellResult struct {
	Cell         string               `json:"cell"`
	Class        sim.SiteClass        `json:"class"` // what sim.Classify names the cell's configuration
	About        string               `json:"about"`
	Chains       int                  `json:"chains"`     // tabled for the scored run
	RankScale    float64              `json:"rank_scale"` // the ranking run's arrival scale
	Periods      []string             `json:"periods"`    // the scored periods' starts (YYYY-MM-DD)
	Ranking      []protocol.WFRow     `json:"ranking"`
	Scored       []protocol.WFRow     `json:"scored"`
	RankOutcomes []protocol.WFOutcome `json:"rank_outcomes"`
	Outcomes     []protocol.WFOutcome `json:"outcomes"` // of the scored periods
	Seconds      float64              `json:"seconds"`  // wall time
	// Stamp identifies what was run (GridSpec.Stamp): a result kept with
	// another stamp is stale.
	Stamp string `json:"stamp"`
}

// Stamp identifies a cell's run under s: its configuration, the periods,
// the refit cadence, the seed and the grid's policies (not the code: a
// kept result outlives a change of a policy; delete it to run again).
func (s GridSpec) Stamp(cell sim.GridCell) (string, error) {
	return stamp(cell, func(h io.Writer) {
		fmt.Fprint(h, s.TraceName, s.Rank.UTC(), s.RankScale, s.Retrain, s.Seed, GridTable, GridReplayed, GridBaselines)
		for _, t := range s.Scored {
			fmt.Fprint(h, t.UTC())
		}
	})
}

// stamp hashes the cell's configuration and what more writes.
func stamp(cell sim.GridCell, more func(io.Writer)) (string, error) {
	cfg, err := cell.Config()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(b)
	more(h)
	return fmt.Sprintf("%x", h.Sum(nil)[:12]), nil
}

// GridCells are the grid's cells: sim.SiteGrid's, then the calibrated
// preset (when not nil) as GridCalibrated, its class whatever Classify
// names it.
func GridCells(calibrated *sim.PresetFile) ([]sim.GridCell, error) {
	cells := sim.SiteGrid()
	if calibrated != nil {
		c, err := calibrated.Build("calibrated")
		if err != nil {
			return nil, err
		}
		class, _ := sim.Classify(c)
		cells = append(cells, sim.GridCell{Name: sim.GridCalibrated, Class: class, About: "mirage sim calibrate's fit of ls6 " + calibrated.Fit, File: *calibrated})
	}
	return cells, nil
}

// RunGridCell runs one cell: the walk-forward of the grid's policies over
// the ranking period (its arrivals scaled) and over the scored periods,
// under the cell's preset.
func RunGridCell(ctx context.Context, s GridSpec, cell sim.GridCell) (*GridCellResult, error) {
	cfg, err := cell.Config()
	if err != nil {
		return nil, err
	}
	stamp, err := s.Stamp(cell)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	wf := func(bounds []time.Time, scale float64) (*protocol.WFResult, error) {
		res, err := protocol.RunWalkForward(ctx, protocol.WFSpec{Jobs: s.Jobs, TraceName: s.TraceName, Cluster: cfg, Bounds: bounds, Retrain: s.Retrain, Scale: scale,
			Policies: GridTable, Replayed: GridReplayed, Baselines: GridBaselines, Seed: s.Seed, Cache: s.Cache,
			Workers: s.Workers, Progress: s.Progress})
		if err != nil {
			return nil, fmt.Errorf("grid cell %s: %w", cell.Name, err)
		}
		return res, nil
	}
	rank, err := wf([]time.Time{s.Rank, s.Scored[0]}, s.RankScale)
	if err != nil {
		return nil, err
	}
	scored, err := wf(s.Scored, 1)
	if err != nil {
		return nil, err
	}
	out := &GridCellResult{Cell: cell.Name, Class: cell.Class, About: cell.About, Chains: scored.Chains, RankScale: max(s.RankScale, 1),
		RankOutcomes: rank.Outcomes, Outcomes: scored.Outcomes, Stamp: stamp}
	for _, t := range s.Scored[:len(s.Scored)-1] {
		out.Periods = append(out.Periods, t.Format("2006-01-02"))
	}
	out.rows()
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// rows pools the outcomes of each run into its rows.
func (r *GridCellResult) rows() {
	r.Ranking = protocol.WalkForwardRows(r.RankOutcomes, 1, 2000, 1)
	r.Scored = protocol.WalkForwardRows(r.Outcomes, len(r.Periods), 2000, 1)
}

// Row is the row of policy p in class ("all", "low", "medium", "heavy")
// of rows, or nil.
func gridRow(rows []protocol.WFRow, p, class string) *protocol.WFRow {
	for i := range rows {
		if rows[i].Policy == p && rows[i].Class == class {
			return &rows[i]
		}
	}
	return nil
}

// GridCellFile is where a cell's result is kept in a grid directory.
func GridCellFile(dir, cell string) string { return filepath.Join(dir, cell+".json") }

// WriteGridCell writes a cell's result (atomically).
func WriteGridCell(path string, r *GridCellResult) error {
	return safefile.WriteFile(path, 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(r)
	})
}

// ReadGridCell reads a cell's result written by WriteGridCell.
func ReadGridCell(path string) (*GridCellResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r GridCellResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("grid cell %s: %w", path, err)
	}
	r.rows() // the rows' NaN ratios are written as null: recompute them from the outcomes
	return &r, nil
}

// Ranking rule (RankSite), on the ranking period's hand-offs, in tiers,
// each ordered by pooled mean |gap|:
//
//  0. candidates that decide with a model and earned their place: they do
//     no harm (below) and the 95% upper bound of their Σ|gap| over that of
//     the best candidate without a model (paired by hand-off, 2,000
//     resamples) is below 1;
//  1. candidates without a model that do no harm;
//  2. candidates with a model that do no harm but did not earn their place;
//  3. candidates that do harm: Σ|gap| above reactive's overall or in the
//     low class.
const rankRule = "tiers, each by pooled mean |gap|: model-backed candidates whose paired 95% upper bound against the best candidate without a model is below 1; " +
	"candidates without a model; other model-backed ones; last, those with Σ|gap| above reactive's overall or in the low class"

// RankSite orders the grid candidates on a cell's ranking period.
func RankSite(r *GridCellResult) []models.RankedPolicy {
	type cand struct {
		models.RankedPolicy
		tier int
	}
	var cs []cand
	for _, p := range GridCandidates() {
		all, low := gridRow(r.Ranking, p, "all"), gridRow(r.Ranking, p, "low")
		if all == nil {
			continue
		}
		c := cand{RankedPolicy: models.RankedPolicy{Policy: p, N: all.N, MeanAbsGap: all.MeanAbsGap, VsReactive: all.VsReactive}, tier: 1}
		lowVs := math.NaN()
		if low != nil && !math.IsNaN(low.VsReactive) {
			lowVs = low.VsReactive
			c.LowVs = &lowVs
		}
		c.Why = fmt.Sprintf("%.2f× reactive's mean |gap| over %d hand-offs (low load %s×)", c.VsReactive, c.N, fmtNaN(lowVs))
		if c.VsReactive > 1 || lowVs > 1 {
			c.tier = 3
			c.Why += ": worse than reactive"
		}
		cs = append(cs, c)
	}
	best := -1 // the best candidate without a model that does no harm
	for i, c := range cs {
		if c.tier == 1 && !models.ParseRef(c.Policy).UsesModel() && (best < 0 || c.MeanAbsGap < cs[best].MeanAbsGap) {
			best = i
		}
	}
	for i := range cs {
		c := &cs[i]
		if c.tier == 3 || !models.ParseRef(c.Policy).UsesModel() {
			continue
		}
		if best < 0 {
			c.tier = 0
			continue
		}
		hi := pairedUpper(r.RankOutcomes, c.Policy, cs[best].Policy)
		if hi < 1 {
			c.tier = 0
			c.Why += fmt.Sprintf("; better than %s (paired 95%% upper bound %.2f×)", cs[best].Policy, hi)
		} else {
			c.tier = 2
			c.Why += fmt.Sprintf("; not shown better than %s (paired 95%% upper bound %s×)", cs[best].Policy, fmtNaN(hi))
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.tier != b.tier {
			return a.tier - b.tier
		}
		return cmp.Compare(a.MeanAbsGap, b.MeanAbsGap)
	})
	out := make([]models.RankedPolicy, len(cs))
	for i, c := range cs {
		out[i] = c.RankedPolicy
	}
	return out
}

// GridRanking is the ranking of every class that a cell of the grid is
// named for (the calibrated preset, whose class another cell also has,
// is reported but ranks nothing), measured as measured says.
func GridRanking(cells []*GridCellResult, measured string) *models.SiteRanking {
	r := &models.SiteRanking{Measured: measured, Rule: rankRule, Classes: map[string][]models.RankedPolicy{}}
	for _, c := range cells {
		if c.Cell == sim.GridCalibrated {
			continue
		}
		r.Classes[string(c.Class)] = RankSite(c)
	}
	return r
}

// pairedUpper is the 95% upper bound of Σ|gap| of policy a over that of b
// on the same hand-offs (a paired percentile bootstrap,
// protocol.WalkForwardRows with b as the reference).
func pairedUpper(outs []protocol.WFOutcome, a, b string) float64 {
	var pair []protocol.WFOutcome
	for _, o := range outs {
		o.Fold = 0
		switch o.Policy {
		case a:
			pair = append(pair, o)
		case b:
			o.Policy = protocol.WFReactive
			pair = append(pair, o)
		}
	}
	if r := gridRow(protocol.WalkForwardRows(pair, 1, 2000, 1), a, "all"); r != nil {
		return r.VsReactive95[1]
	}
	return math.NaN()
}

func fmtNaN(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// GridDefault is the policy the ranking gives the class of cell r (the
// default mirage submit chooses there, its model trained), "" when the
// class is unranked.
func GridDefault(rk *models.SiteRanking, r *GridCellResult) string {
	if ps := rk.Classes[string(r.Class)]; len(ps) > 0 {
		return ps[0].Policy
	}
	return ""
}

// WriteGridTable writes the scored periods of every cell as a markdown
// table: per cell, reactive, the oracle, every candidate and the site's
// default (marked), their pooled mean |gap|, × reactive with its paired
// 95% interval, the low class's ratio and interval, the mean overlap in
// low load, and the ratio month by month (periods names the columns).
func WriteGridTable(w io.Writer, cells []*GridCellResult, rk *models.SiteRanking, periods []string) error {
	head := "| cell | class | policy | n | mean \\|gap\\| (h) | × reactive | 95% CI | low: × reactive | low 95% CI | low: mean overlap (h) | × oracle |"
	sep := "|---|---|---|---|---|---|---|---|---|---|---|"
	for _, p := range periods {
		head += " " + p + " |"
		sep += "---|"
	}
	if _, err := fmt.Fprintln(w, head+"\n"+sep); err != nil {
		return err
	}
	for _, c := range cells {
		def := GridDefault(rk, c)
		for _, p := range slices.Concat([]string{protocol.WFReactive, protocol.WFOracle}, GridCandidates()) {
			all, low := gridRow(c.Scored, p, "all"), gridRow(c.Scored, p, "low")
			if all == nil {
				continue
			}
			name := p
			if p == def {
				name = "**" + p + "** (default)"
			}
			lr, lci, lo := "–", "–", "–"
			if low != nil {
				lr, lci, lo = fmtNaN(low.VsReactive), fmtNaN(low.VsReactive95[0])+"–"+fmtNaN(low.VsReactive95[1]), fmt.Sprintf("%.2f", low.MeanOverlap)
			}
			line := fmt.Sprintf("| %s | %s | %s | %d | %.2f | %s | %s–%s | %s | %s | %s | %s |", c.Cell, c.Class, name, all.N, all.MeanAbsGap,
				fmtNaN(all.VsReactive), fmtNaN(all.VsReactive95[0]), fmtNaN(all.VsReactive95[1]), lr, lci, lo, fmtNaN(all.VsOracle))
			for _, v := range all.PerFold {
				line += " " + fmtNaN(v) + " |"
			}
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteRankingTable writes the ranking period's rows of every cell and
// the order RankSite gives the candidates (the calibrated cell's for
// comparison: it ranks nothing).
func WriteRankingTable(w io.Writer, cells []*GridCellResult) error {
	if _, err := fmt.Fprintln(w, "| cell | class | rank | policy | n | mean \\|gap\\| (h) | × reactive | 95% CI | low: × reactive | low: mean overlap (h) | why |\n|---|---|---|---|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	for _, c := range cells {
		for i, p := range RankSite(c) {
			all, low := gridRow(c.Ranking, p.Policy, "all"), gridRow(c.Ranking, p.Policy, "low")
			lo := "–"
			if low != nil {
				lo = fmt.Sprintf("%.2f", low.MeanOverlap)
			} else {
				low = &protocol.WFRow{VsReactive: math.NaN()}
			}
			if _, err := fmt.Fprintf(w, "| %s | %s | %d | %s | %d | %.2f | %s | %s–%s | %s | %s | %s |\n", c.Cell, c.Class, i+1, p.Policy, p.N, p.MeanAbsGap,
				fmtNaN(p.VsReactive), fmtNaN(all.VsReactive95[0]), fmtNaN(all.VsReactive95[1]), fmtNaN(low.VsReactive), lo, p.Why); err != nil {
				return err
			}
		}
	}
	return nil
}
