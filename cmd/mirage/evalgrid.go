package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/sim"
)

// evalGridOptions are the flags of mirage eval site-grid.
type evalGridOptions struct {
	f                  *Factory
	trace, out         string
	cells              []string
	calibrated         string
	rank, until, cache string
	rankScale          float64
	months             []string
	retrain            time.Duration
	seed               uint64
	workers            int
	report, list, json bool
	runs               bool
	every              time.Duration
	traceOpts          traceFlags
}

func newEvalSiteGridCmd(f *Factory, runF func(*evalGridOptions) error) *cobra.Command {
	o := &evalGridOptions{f: f}
	cmd := &cobra.Command{
		Use:   "site-grid --trace FILE --out DIR --rank START --months START[,START...] --until END [--cell NAME|INDEX]",
		Short: "Score the default policies under a grid of site scheduler settings, one cell per process",
		Long: `Run the walk-forward of the default policies' candidates (pin, dependency,
xgb-online and xgb-online-pin, with reactive and the oracle) under each cell of the site grid:
the hand-made ls6 preset and settings that change what a successor queued early
gains (priority/basic, age weight 0, age-dominant with PriorityMaxAge 1 and 14
days, fair-share-dominant, MaxJobsAccrue 1 per user, bf_window 1 day), and with
--calibrated a calibrated preset. The period [--rank, first --months), its
arrivals scaled by --rank-scale (a quiet month ranks nothing), ranks the
candidates per site class; the --months periods are scored as recorded. Each cell writes
DIR/CELL.json; cells run as separate processes or job-array tasks (--cell
"$SLURM_ARRAY_TASK_ID"); a cell kept in DIR from the same settings is not run
again (delete its file to rerun it), and --report reads DIR and prints the grid and the
ranking (--json: the ranking file mirage submit's default reads).
Method: docs/guide/training-and-evaluation.md.`,
		Example: `  mirage eval site-grid --list
  mirage eval site-grid --trace ls6.log.gz --out grid --rank 2022-11-15 --months 2022-12-01,2023-01-01,2023-02-01 --until 2023-02-27 --cell age0
  mirage eval site-grid --out grid --report`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return evalSiteGrid(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.trace, "trace", "", "trace file (required to run cells)")
	fl.StringVar(&o.out, "out", "", "directory of the cells' results (required but with --list)")
	fl.StringSliceVar(&o.cells, "cell", nil, "cells to run, by name or index in --list's order (default: all)")
	fl.StringVar(&o.calibrated, "calibrated", "", "preset file of a calibration (mirage sim calibrate, fitted before --rank's period ends) to add as the cell \"calibrated\"")
	fl.StringVar(&o.rank, "rank", "", "start of the ranking period (required to run cells)")
	fl.Float64Var(&o.rankScale, "rank-scale", 1, "scale the ranking period's arrivals by this (1–16), to rank at the scored months' demand")
	fl.StringSliceVar(&o.months, "months", nil, "start of each scored period (required to run cells)")
	fl.StringVar(&o.until, "until", "", "end of the last scored period (required to run cells)")
	fl.DurationVar(&o.retrain, "retrain", 7*24*time.Hour, "refit the learned policies this often inside a period")
	fl.StringVar(&o.cache, "cache", "", "chain table cache, by injection day (default: $XDG_CACHE_HOME/mirage/datasets; \"-\": none)")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the simulator and of every fit")
	fl.IntVar(&o.workers, "workers", 0, "simulator goroutines (default: all cores)")
	fl.BoolVar(&o.runs, "runs", false, "replay whole training runs (7 days of work, hand-off) of reactive and the candidates in the --months periods (to --until) instead, into DIR/CELL.runs.json (--rank not needed)")
	fl.DurationVar(&o.every, "every", 48*time.Hour, "with --runs: a run of 1 and one of 8 nodes injected this often")
	fl.BoolVar(&o.report, "report", false, "read DIR's cells and print the grid and the ranking instead of running cells")
	fl.BoolVar(&o.list, "list", false, "list the cells and exit")
	fl.BoolVar(&o.json, "json", false, "with --report, print the ranking file (models.SiteRanking) as JSON")
	o.traceOpts.add(cmd)
	return cmd
}

func evalSiteGrid(ctx context.Context, o *evalGridOptions) error {
	var cal *sim.PresetFile
	if o.calibrated != "" {
		pf, err := sim.ReadPresetFile(o.calibrated)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("--calibrated: %w", err))
		}
		cal = &pf
	}
	cells, err := eval.GridCells(cal)
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	if o.list {
		for i, c := range cells {
			fmt.Fprintf(o.f.Out, "%d\t%s\t%s\t%s\n", i, c.Name, c.Class, c.About)
		}
		return nil
	}
	if o.out == "" {
		return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("--out DIR is required: where the cells' results are kept"))
	}
	if o.report {
		return siteGridReport(o)
	}
	run, err := pickCells(cells, o.cells)
	if err != nil {
		return err
	}
	if o.trace == "" || (o.rank == "" && !o.runs) || len(o.months) == 0 || o.until == "" {
		return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("running cells needs --trace, --rank, --months and --until (--runs: all but --rank)"))
	}
	jobs, err := o.traceOpts.read(o.trace)
	if err != nil {
		return err
	}
	loc := jobs[0].Submit.Location()
	if o.rankScale < 1 || o.rankScale > 16 {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--rank-scale %g: want 1 to 16", o.rankScale))
	}
	s := eval.GridSpec{Jobs: jobs, TraceName: filepath.Base(o.trace), RankScale: o.rankScale, Retrain: o.retrain, Seed: o.seed, Workers: o.workers,
		Progress: train.Bar{Progress: term.NewProgress(o.f.progress(), "")}}
	if o.rank != "" {
		if s.Rank, err = parseWhen("rank", o.rank, loc); err != nil {
			return err
		}
	}
	for _, m := range append(slices.Clone(o.months), o.until) {
		t, err := parseWhen("months", m, loc)
		if err != nil {
			return err
		}
		s.Scored = append(s.Scored, t)
	}
	switch o.cache {
	case "":
		s.Cache = dataset.DefaultCacheDir()
	case "-":
	default:
		s.Cache = o.cache
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if o.runs {
		return siteGridRuns(ctx, o, s, run)
	}
	for _, c := range run {
		path := eval.GridCellFile(o.out, c.Name)
		stamp, err := s.Stamp(c)
		if err != nil {
			return err
		}
		if kept, err := eval.ReadGridCell(path); err == nil && kept.Stamp == stamp {
			fmt.Fprintf(o.f.Out, "cell %s (%s): kept in %s (same preset, periods, cadence, seed and policies; delete it to run again)\n", c.Name, c.Class, path)
			continue
		}
		r, err := eval.RunGridCell(ctx, s, c)
		if err != nil {
			return trainExitErr(err)
		}
		if err := eval.WriteGridCell(path, r); err != nil {
			return err
		}
		fmt.Fprintf(o.f.Out, "cell %s (%s): %d chains in %s → %s\n", c.Name, c.Class, r.Chains, time.Duration(r.Seconds*float64(time.Second)).Round(time.Second), path)
	}
	return nil
}

// siteGridRuns replays the whole runs of each cell of run.
func siteGridRuns(ctx context.Context, o *evalGridOptions, s eval.GridSpec, run []sim.GridCell) error {
	if o.every < time.Hour {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--every %s: want at least 1h", o.every))
	}
	for _, c := range run {
		path := eval.GridRunsFile(o.out, c.Name)
		stamp, err := s.RunsStamp(c, s.Scored, o.every)
		if err != nil {
			return err
		}
		if kept, err := eval.ReadGridRuns(path); err == nil && kept.Stamp == stamp {
			fmt.Fprintf(o.f.Out, "cell %s (%s): whole runs kept in %s (same settings; delete it to run again)\n", c.Name, c.Class, path)
			continue
		}
		r, err := eval.RunGridRuns(ctx, s, c, s.Scored, o.every)
		if err != nil {
			return trainExitErr(err)
		}
		if err := eval.WriteGridRuns(path, r); err != nil {
			return err
		}
		fmt.Fprintf(o.f.Out, "cell %s (%s): %d whole runs in %s → %s\n", c.Name, c.Class, len(r.Runs), time.Duration(r.Seconds*float64(time.Second)).Round(time.Second), path)
	}
	return nil
}

// pickCells resolves --cell values (names, or indexes as a job array's
// task id gives them) in the grid's order.
func pickCells(cells []sim.GridCell, want []string) ([]sim.GridCell, error) {
	if len(want) == 0 {
		return cells, nil
	}
	var out []sim.GridCell
	for _, w := range want {
		i := slices.IndexFunc(cells, func(c sim.GridCell) bool { return c.Name == w })
		if n, err := strconv.Atoi(w); err == nil && n >= 0 && n < len(cells) {
			i = n
		}
		if i < 0 {
			var names []string
			for _, c := range cells {
				names = append(names, c.Name)
			}
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--cell %q: want one of %s (or an index from 0 to %d; \"calibrated\" needs --calibrated)", w, strings.Join(names, ", "), len(cells)-1))
		}
		out = append(out, cells[i])
	}
	return out, nil
}

// siteGridReport reads every cell of DIR and prints the grid and the
// ranking.
func siteGridReport(o *evalGridOptions) error {
	files, err := filepath.Glob(filepath.Join(o.out, "*.json"))
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, ".runs.json") })
	if err != nil || len(files) == 0 {
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("--out %s: no cell results (*.json) to report", o.out))
	}
	var cells []*eval.GridCellResult
	for _, f := range files {
		r, err := eval.ReadGridCell(f)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitBadInput, err)
		}
		cells = append(cells, r)
	}
	rk := eval.GridRanking(cells, "mirage eval site-grid --report "+o.out)
	if o.json {
		return cmdutil.PrintJSON(o.f.Out, rk)
	}
	if err := writeGridReport(o.f.Out, cells, rk); err != nil {
		return err
	}
	runFiles, _ := filepath.Glob(filepath.Join(o.out, "*.runs.json"))
	if len(runFiles) == 0 {
		return nil
	}
	var runs []*eval.GridRunsResult
	defaults := map[string]string{}
	for _, c := range cells {
		defaults[c.Cell] = eval.GridDefault(rk, c)
	}
	for _, f := range runFiles {
		r, err := eval.ReadGridRuns(f)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitBadInput, err)
		}
		runs = append(runs, r)
	}
	fmt.Fprintln(o.f.Out, "\nWhole runs:")
	return eval.WriteGridRunsTable(o.f.Out, runs, defaults)
}

func writeGridReport(w io.Writer, cells []*eval.GridCellResult, rk *models.SiteRanking) error {
	fmt.Fprintln(w, "Ranking period:")
	if err := eval.WriteRankingTable(w, cells); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nScored periods:")
	return eval.WriteGridTable(w, cells, rk, cells[0].Periods)
}
