package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/eval/protocol"
	"github.com/mirage-gpu/mirage/internal/acceptance"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/sim"
)

// The site grid on the shared LS6 file (issue 45), shared by the pages
// that report it: walk-forward.md (the scored months under every cell),
// pin-november.md (the ranking period, the second half of November, and
// the ranking it gives) and whole-run.md. One walk-forward per cell
// (RunGridCell), each kept in the grid directory: $MIRAGE_SITEGRID_DIR, else
// the user's cache (mirage/sitegrid). A kept cell whose stamp (preset,
// periods, cadence, seed, policies) matches is read, not run again, so
// cells may be run beforehand as separate processes (scripts/site-grid.sh
// runs them all, and make results runs it before these pages):
//
//	mirage eval site-grid --trace ls6-a100-until-2023-03-01.log.gz --out DIR \
//	    --rank 2022-11-15 --rank-scale S --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-27 \
//	    --calibrated DIR/calibrated.yaml --cell N          # N = 0 … 8
//	mirage eval site-grid --runs --trace ls6-a100-until-2023-03-01.log.gz --out DIR \
//	    --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-20 --every 48h \
//	    --calibrated DIR/calibrated.yaml --cell N          # whole-run.md's runs
//
// with S the scale novemberAtBusyDemand computes (pin-november.md prints it).
//
// The calibrated preset is fitted on the jobs submitted before
// 1 December 2022 (sim.Calibrate from ls6, as `mirage sim calibrate
// --fit-until 2022-12-01`), kept as DIR/calibrated.yaml.

// gridLS6Cmd regenerates the grid's pages.
const gridLS6Cmd = `scripts/site-grid.sh && MIRAGE_WALKFORWARD=1 MIRAGE_HELDOUT=1 MIRAGE_UPDATE_RESULTS=1 go test -tags "libsqlite3 xgboost" -run '^(TestWalkForwardLS6|TestPinNovemberLS6)$' -v -timeout 12h ./eval/`

// siteRankingFile is the ranking mirage submit's default reads (embedded
// in models), written by TestPinNovemberLS6 from the ranking period.
const siteRankingFile = "../models/site_ranking.json"

// ls6Grid is the grid as the LS6 pages use it.
type ls6Grid struct {
	spec    GridSpec
	cells   []*GridCellResult
	ranking *models.SiteRanking
	dir     string
}

var (
	gridOnce sync.Once
	gridLS6  *ls6Grid
	gridErr  error
)

// siteGridLS6 loads (or runs: hours on 2 cores) every cell of the LS6
// grid, once per test binary, for the page tests (each gated by its own
// variable).
func siteGridLS6(t *testing.T) *ls6Grid {
	t.Helper()
	gridOnce.Do(func() { gridLS6, gridErr = loadGridLS6(t) })
	if gridErr != nil {
		t.Fatal(gridErr)
	}
	return gridLS6
}

// gridRankStart is the start of the ranking period: the chains injected
// from then until the first scored month rank the candidates, their
// models fitted on the chains known by then (the trace starts on
// 1 November; two weeks of chains are the least a fit of ten needs with
// room to spare).
func gridRankStart() time.Time {
	chi, _ := time.LoadLocation("America/Chicago")
	return time.Date(2022, 11, 15, 0, 0, 0, 0, chi)
}

func loadGridLS6(t *testing.T) (*ls6Grid, error) {
	path, jobs, cache := sharedLS6(t)
	dir := os.Getenv("MIRAGE_SITEGRID_DIR")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(c, "mirage", "sitegrid")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	scale, _, _ := novemberAtBusyDemand(jobs)
	g := &ls6Grid{dir: dir, spec: GridSpec{Jobs: jobs, TraceName: filepath.Base(path), Rank: gridRankStart(), RankScale: scale, Scored: ls6Months(27),
		Retrain: 7 * 24 * time.Hour, Seed: 1, Cache: cache}}
	cal, err := calibratedLS6(t, g.spec, dir)
	if err != nil {
		return nil, err
	}
	cells, err := GridCells(&cal)
	if err != nil {
		return nil, err
	}
	for _, c := range cells {
		stamp, err := g.spec.Stamp(c)
		if err != nil {
			return nil, err
		}
		file := GridCellFile(dir, c.Name)
		r, err := ReadGridCell(file)
		switch {
		case err == nil && r.Stamp == stamp:
			t.Logf("grid cell %s: kept in %s (%s wall when run)", c.Name, file, time.Duration(r.Seconds*float64(time.Second)).Round(time.Second))
		case err == nil || errors.Is(err, fs.ErrNotExist):
			t.Logf("grid cell %s: running", c.Name)
			if r, err = RunGridCell(context.Background(), g.spec, c); err != nil {
				return nil, err
			}
			if err := WriteGridCell(file, r); err != nil {
				return nil, err
			}
			t.Logf("grid cell %s: %d chains in %s", c.Name, r.Chains, time.Duration(r.Seconds*float64(time.Second)).Round(time.Second))
		default:
			return nil, err
		}
		g.cells = append(g.cells, r)
	}
	g.ranking = GridRanking(g.cells, fmt.Sprintf("TestPinNovemberLS6 (eval): the site grid's walk-forward on the shared LS6 file, November's arrivals scaled ×%.2f "+
		"to December–February's demand, chains of 1 and 8 nodes injected every 4 h from 2022-11-15 to 2022-12-01 (US Central), models fitted weekly "+
		"on the chains known before each fit", scale))
	return g, nil
}

// calibratedLS6 is the calibrated LS6 preset, fitted on the jobs submitted
// before the first scored month (so before the ranking period ends:
// nothing in it is chosen on a scored month), kept as DIR/calibrated.yaml.
func calibratedLS6(t *testing.T, s GridSpec, dir string) (sim.PresetFile, error) {
	path := filepath.Join(dir, "calibrated.yaml")
	if pf, err := sim.ReadPresetFile(path); err == nil && pf.Fit == (sim.Span{Until: s.Scored[0]}).String() {
		return pf, nil
	}
	t.Logf("calibrating ls6 on the jobs before %s", s.Scored[0].Format("2006-01-02"))
	base := sim.LS6()
	cal, err := sim.Calibrate(context.Background(), sim.CalibrateSpec{Jobs: s.Jobs, Base: base, Fit: sim.Span{Until: s.Scored[0]},
		Score: sim.Span{From: s.Scored[0], Until: s.Scored[len(s.Scored)-1]}, Space: sim.DefaultSpace(base)})
	if err != nil {
		return sim.PresetFile{}, err
	}
	pf, err := sim.CalibratedPreset(sim.Options{Preset: "ls6"}, s.TraceName, cal)
	if err != nil {
		return sim.PresetFile{}, err
	}
	return pf, sim.WritePresetFile(path, pf)
}

// checkRankingFile compares the ranking compiled into models with the
// grid's: the default mirage submit reads must be the one measured.
// With MIRAGE_UPDATE_RESULTS=1 the file is written instead.
func checkRankingFile(t *testing.T, g *ls6Grid) {
	t.Helper()
	b, err := json.MarshalIndent(g.ranking, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("MIRAGE_UPDATE_RESULTS") == "1" {
		if err := os.WriteFile(siteRankingFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	compiled, err := models.LoadSiteRanking()
	if err != nil {
		t.Fatal(err)
	}
	back, err := models.ParseSiteRanking(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(compiled.Classes, back.Classes) {
		t.Errorf("models/site_ranking.json differs from the grid's ranking: regenerate it (%s)", gridLS6Cmd)
	}
}

// writeGridWalkForward writes walk-forward.md's section on the site grid:
// the scored months under every cell, each cell's default (the ranking's
// first for its class, measured on the ranking period only), and issue
// 45's acceptance lines as assertions, through acc (a line that reads
// "no" fails the test once the page is written).
func writeGridWalkForward(t *testing.T, b *bytes.Buffer, acc *acceptance.Lines) {
	g := siteGridLS6(t)
	fmt.Fprintf(b, "\n## The site grid (issue 45)\n\nWhat a successor queued early gains depends on the site's scheduler settings, so every default candidate is scored under a\n"+
		"grid of them, each a preset over the hand-made `ls6` (`sim.SiteGrid`; `mirage eval site-grid --list`), and under the LS6 preset\n"+
		"calibrated on the jobs submitted before 1 December (`mirage sim calibrate --fit-until 2022-12-01`: %s). Per cell one walk-forward\n"+
		"of the candidates (%s; with reactive and the oracle of the tables), the same protocol as above, models refitted weekly on the\n"+
		"chains known at each fit. Its first period, chains injected from 15 to 30 November, only ranks the candidates per site class\n"+
		"(pin-november.md; the ranking `mirage submit`'s default reads, models/site_ranking.json); the scored months below played no\n"+
		"part in it, nor in the grid's settings or the calibration. **Bold**: the cell's default, the ranking's first for the cell's class\n"+
		"(the calibrated preset's class is %s, whose ranking it takes, as a site with its settings would). Regenerate with the grid\n"+
		"(cells kept in the grid directory are read, not run again): `%s`.\n\n",
		calibratedAbout(g), strings.Join(GridCandidates(), ", "), classOf(g, sim.GridCalibrated), gridLS6Cmd)
	if err := WriteGridTable(b, g.cells, g.ranking, []string{"Dec", "Jan", "Feb"}); err != nil {
		t.Fatal(err)
	}
	line := func(ok bool, format string, args ...any) {
		text := fmt.Sprintf(format, args...)
		fmt.Fprintf(b, "- %s — %s\n", text, acc.Verdict(ok, text))
	}
	b.WriteString("\n### Issue 45's acceptance, measured\n\n")
	for _, c := range g.cells {
		def := GridDefault(g.ranking, c)
		all := gridRow(c.Scored, def, "all")
		if def == "" || all == nil {
			line(false, "%s: a default ranked for class %s and scored", c.Cell, c.Class)
			continue
		}
		line(all.VsReactive <= 1, "%s: the default %s is never worse than reactive overall: %.2f× reactive's mean |gap| (≤ 1.0×)", c.Cell, def, all.VsReactive)
		pin := gridRow(c.Scored, "pin", "all")
		switch c.Cell {
		case sim.GridLS6:
			line(pin != nil && all.MeanAbsGap <= pin.MeanAbsGap, "%s, where pin pays: the default %s is at least as good as pin: %.2f h against %.2f h", c.Cell, def, all.MeanAbsGap, pinGap(pin))
		case sim.GridCalibrated, string(sim.SiteNoAge):
			low := gridRow(c.Scored, def, "low")
			if low == nil {
				line(false, "%s: the default %s has low-load hand-offs to measure", c.Cell, def)
				continue
			}
			line(all.VsReactive <= 0.7, "%s: the default %s's pooled mean |gap| ≤ 0.7× reactive's: %.2f× (%.2f–%.2f)", c.Cell, def, all.VsReactive, all.VsReactive95[0], all.VsReactive95[1])
			line(low.VsReactive <= 1 && low.VsReactive95[1] <= 1.1, "%s: low class ≤ 1.0× reactive, 95%% upper bound ≤ 1.1×: %.2f× (%.2f–%.2f)", c.Cell, low.VsReactive, low.VsReactive95[0], low.VsReactive95[1])
			line(low.MeanOverlap <= 0.25, "%s: mean overlap in low load ≤ 0.25 h: %.2f h", c.Cell, low.MeanOverlap)
			line(models.ParseRef(def).UsesModel() && pin != nil && all.MeanAbsGap < pin.MeanAbsGap, "%s, where pin pays little: the default decides with a model and beats pin: %s, %.2f h against pin's %.2f h",
				c.Cell, def, all.MeanAbsGap, pinGap(pin))
		}
	}
}

func pinGap(r *protocol.WFRow) float64 {
	if r == nil {
		return math.NaN()
	}
	return r.MeanAbsGap
}

// calibratedAbout says what the calibration chose.
func calibratedAbout(g *ls6Grid) string {
	for _, c := range g.cells {
		if c.Cell == sim.GridCalibrated {
			return c.About
		}
	}
	return "not run"
}

// classOf is the class of the named cell.
func classOf(g *ls6Grid, cell string) sim.SiteClass {
	for _, c := range g.cells {
		if c.Cell == cell {
			return c.Class
		}
	}
	return ""
}

// writeGridRanking writes pin-november.md's section on the site grid's
// ranking period and writes (or, without MIRAGE_UPDATE_RESULTS, checks)
// models/site_ranking.json.
func writeGridRanking(t *testing.T, b *bytes.Buffer) {
	g := siteGridLS6(t)
	fmt.Fprintf(b, "\n## The site grid's ranking: 15 to 30 November\n\n"+
		"Under each cell of the site grid (walk-forward.md, \"The site grid\"), the candidates for a chain's default (%s) are played on\n"+
		"the chains injected every 4 h from 15 November to 1 December, the learned ones fitted weekly on the chains known at each fit (the\n"+
		"trace begins on 1 November), and ranked per site class by this rule: %s. The first of a class is\n"+
		"`mirage submit`'s default on a site of that class (`mirage site` names it) once its model is trained; the rest are the order it\n"+
		"falls back in. The calibrated preset ranks nothing (its class has its own cell) and is shown for comparison. Written to\n"+
		"models/site_ranking.json by this test; no figure of December to February entered it.\n\n", strings.Join(GridCandidates(), ", "), rankRule)
	if err := WriteRankingTable(b, g.cells); err != nil {
		t.Fatal(err)
	}
	checkRankingFile(t, g)
}

// gridRunsEvery is the injection spacing of the grid's whole runs: a run
// of each size every 2 days (whole-run.md's own runs come every 12 h; the
// grid replays nine presets).
const gridRunsEvery = 48 * time.Hour

// writeGridRuns writes whole-run.md's section on the site grid: whole
// training runs of reactive and every candidate under each cell (kept in
// the grid directory as CELL.runs.json, run when missing), each cell's
// default marked.
func writeGridRuns(t *testing.T, b *bytes.Buffer) {
	g := siteGridLS6(t)
	cells, err := GridCells(calibratedOf(g))
	if err != nil {
		t.Fatal(err)
	}
	bounds := ls6Months(20)
	var runs []*GridRunsResult
	defaults := map[string]string{}
	for _, r := range g.cells {
		defaults[r.Cell] = GridDefault(g.ranking, r)
	}
	for _, c := range cells {
		stamp, err := g.spec.RunsStamp(c, bounds, gridRunsEvery)
		if err != nil {
			t.Fatal(err)
		}
		file := GridRunsFile(g.dir, c.Name)
		r, err := ReadGridRuns(file)
		if err != nil || r.Stamp != stamp {
			t.Logf("grid cell %s: whole runs", c.Name)
			if r, err = RunGridRuns(context.Background(), g.spec, c, bounds, gridRunsEvery); err != nil {
				t.Fatal(err)
			}
			if err := WriteGridRuns(file, r); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, r)
	}
	fmt.Fprintf(b, "\n## Whole runs under the site grid (issue 45)\n\n"+
		"The training workload's whole runs (as above: 7 days of work, 48 h segments, hand-off) of reactive and each default candidate\n"+
		"(%s) under every cell of the site grid (walk-forward.md, \"The site grid\"), a run of 1 and one of 8 nodes every %s from\n"+
		"1 December to 20 February, `xgb-online` fitted for the training cost once per month on the chains known at its start. **Bold**: the\n"+
		"cell's default, ranked on November (pin-november.md), not on these runs. Overhead × reactive: Σ overhead / reactive's on the\n"+
		"same runs (95%% bootstrap interval), pooled and per load class; GPU-h: charged GPU-hours against reactive's.\n\n",
		strings.Join(GridCandidates(), ", "), gridRunsEvery)
	if err := WriteGridRunsTable(b, runs, defaults); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\nFor comparison (issue 45 sets no whole-run line; not asserted):\n\n")
	for _, r := range runs {
		groups := metrics.ComputeRuns(r.Runs, metrics.Options{Policies: GridRunPolicies(), BootstrapBelow: -1})
		if d := findRunGroup(groups, defaults[r.Cell], metrics.AllClasses); d != nil && d.OverheadRatio != nil {
			fmt.Fprintf(b, "- %s: the default %s's overhead is %.2f× reactive's — %s\n", r.Cell, defaults[r.Cell], *d.OverheadRatio, acceptance.Compared(*d.OverheadRatio <= 1))
		}
	}
}

// calibratedOf is the grid's calibrated preset (its cell's file).
func calibratedOf(g *ls6Grid) *sim.PresetFile {
	pf, err := sim.ReadPresetFile(filepath.Join(g.dir, "calibrated.yaml"))
	if err != nil {
		return nil
	}
	return &pf
}
