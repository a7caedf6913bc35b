package eval

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/eval/report"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// ReadReports reads the report JSON files of paths, each a file or a
// directory whose *.json files are read in name order (as `mirage eval
// merge` takes them).
func ReadReports(paths []string) ([]*report.Report, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no *.json files", p)
		}
		slices.Sort(m)
		files = append(files, m...)
	}
	reports := make([]*report.Report, 0, len(files))
	for _, f := range files {
		r, err := report.ReadFile(f)
		if err != nil {
			if errors.Is(err, report.ErrBad) {
				return nil, err
			}
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// WriteCell writes the report of cell i of an experiment to CellFile(out, i)
// and returns the path.
func WriteCell(r *report.Report, out string, i int) (string, error) {
	path := CellFile(out, i)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, safefile.WriteFile(path, 0o644, r.WriteJSON)
}

// WriteArray writes the job-array script of ArrayScript to
// OUT/eval-array.sbatch (executable), creates OUT/logs and OUT/cells, and
// returns what it wrote: the script's path and the number of cells. An
// empty mirage is this running binary.
func WriteArray(e *Experiment, sweepPath, mirage, version string) (*Written, error) {
	if mirage == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the mirage binary for the array tasks: %w (set slurm.mirage in the sweep)", err)
		}
		mirage = self
	}
	script, err := ArrayScript(e, sweepPath, mirage, version)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"logs", "cells"} {
		if err := os.MkdirAll(filepath.Join(e.Out, d), 0o755); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(e.Out, "eval-array.sbatch")
	if err := safefile.WriteFile(path, 0o755, func(w io.Writer) error { _, err := io.WriteString(w, script); return err }); err != nil {
		return nil, err
	}
	return &Written{Paths: map[string]string{"script": path, "cells": strconv.Itoa(len(e.Cells()))}}, nil
}

// Run runs an experiment and writes what it made: with cell ≥ 0 that cell
// alone, its report to CellFile(e.Out, cell) (a cell the experiment lacks is
// ErrBadSetup); else every cell (RunAll), the merged report into e.Out —
// written even when it holds no sample, and then Run returns what it wrote
// and ErrNoSamples with the reason (CheckSamples). A single cell
// without samples is no error: the merge of the sweep's cells judges.
// onCell (nil: none) is called before each cell is run.
func Run(ctx context.Context, e *Experiment, cell int, rt *Runtime, onCell func(c CellSpec, i, n int)) (*Written, error) {
	if cell < 0 {
		r, err := RunAll(ctx, e, rt, onCell)
		if err != nil {
			return nil, err
		}
		w, err := WrittenReport(r, e.Out)
		if err != nil {
			return nil, err
		}
		return w, CheckSamples(r, e.Out)
	}
	cells := e.Cells()
	if cell >= len(cells) {
		return nil, badSetup(fmt.Errorf("--cell %d: the sweep has cells 0 to %d", cell, len(cells)-1))
	}
	if onCell != nil {
		onCell(cells[cell], cell, len(cells))
	}
	r, err := RunCell(ctx, e, cells[cell], rt)
	if err != nil {
		return nil, err
	}
	path, err := WriteCell(r, e.Out, cell)
	if err != nil {
		return nil, err
	}
	return &Written{Paths: map[string]string{"cell": path}}, nil
}

// ErrNoSamples: an experiment measured no hand-off, so its report says
// nothing about any policy.
var ErrNoSamples = errors.New("the experiment produced no samples")

// CheckSamples returns nil if report r holds a sample (a hand-off or a whole run),
// else ErrNoSamples with what its cells injected and why a chain goes
// unmeasured; dir, where the report was written, is named in it ("": not
// written).
func CheckSamples(r *report.Report, dir string) error {
	if len(r.Samples) > 0 || len(r.Runs) > 0 {
		return nil
	}
	injections, unmeasured := 0, 0
	for _, c := range r.Provenance.Cells {
		n, _ := strconv.Atoi(c.Params["injections"])
		u, _ := strconv.Atoi(c.Params["unmeasured"])
		injections, unmeasured = injections+n, unmeasured+u
	}
	where := ""
	if dir != "" {
		where = " (the report, with its provenance, is in " + dir + ")"
	}
	return fmt.Errorf("%w: %d cell(s) injected chains at %d instants and measured none (%d hand-offs or runs unmeasured): a chain is measured only once its first job starts within the protocol's start deadline and its predecessor ends; check that the preset does not rank the chains' jobs below every job of the trace (its priority weights), that the cluster has the nodes the chains ask for, and that --from/--until leave time after the warm-up%s",
		ErrNoSamples, len(r.Provenance.Cells), injections, unmeasured, where)
}

// Written is what a run of `mirage eval` wrote: paths by kind ("cell",
// "script", "cells" (a count), "html", "markdown", "json") and the report,
// when one was made.
type Written struct {
	Paths  map[string]string
	Report *report.Report
}

// WrittenReport writes the report's three files into dir.
func WrittenReport(r *report.Report, dir string) (*Written, error) {
	paths, err := r.WriteFiles(dir)
	if err != nil {
		return nil, err
	}
	return &Written{Paths: map[string]string{"json": paths[0], "markdown": paths[1], "html": paths[2]}, Report: r}, nil
}

// headline is one policy's overall figures in the JSON of Written.
type headline struct {
	Protocol         string   `json:"protocol"`
	LoadScale        float64  `json:"load_scale"`
	Policy           string   `json:"policy"`
	N                int      `json:"n"`
	InterruptionMean float64  `json:"interruption_mean_h"`
	ZeroInterruption float64  `json:"zero_interruption"`
	Reduction        *float64 `json:"reduction,omitempty"`
}

// runHeadline is one policy's whole-run figures over all runs in the JSON of Written.
type runHeadline struct {
	Protocol       string   `json:"protocol"`
	LoadScale      float64  `json:"load_scale"`
	Policy         string   `json:"policy"`
	N              int      `json:"runs"`
	CompletionMean float64  `json:"completion_mean_h"`
	OverheadMean   float64  `json:"overhead_mean_h"`
	OverheadRatio  *float64 `json:"overhead_ratio,omitempty"`
	ChargedRatio   *float64 `json:"charged_ratio,omitempty"`
}

// JSON is the paths, the sample count and each policy's headline figures
// (all job sizes and load classes), for --json.
func (w *Written) JSON() any {
	v := struct {
		Paths    map[string]string `json:"paths"`
		Samples  int               `json:"samples,omitempty"`
		Headline []headline        `json:"headline,omitempty"`
		Runs     []runHeadline     `json:"runs,omitempty"` // the run protocol's whole runs
	}{Paths: w.Paths}
	if r := w.Report; r != nil {
		v.Samples = len(r.Samples)
		for _, g := range r.Groups {
			if g.Nodes == 0 && g.LoadClass == metrics.AllClasses {
				v.Headline = append(v.Headline, headline{g.Protocol, g.LoadScale, g.Policy, g.N, g.InterruptionMean, g.ZeroInterruption, g.Reduction})
			}
		}
		for _, g := range r.RunGroups {
			if g.Nodes == 0 && g.LoadClass == metrics.AllClasses {
				v.Runs = append(v.Runs, runHeadline{g.Protocol, g.LoadScale, g.Policy, g.N, g.CompletionMean, g.OverheadMean, g.OverheadRatio, g.ChargedRatio})
			}
		}
	}
	return v
}

// WriteText prints the written files' paths, one a line.
func (w *Written) WriteText(out io.Writer) error {
	for _, k := range []string{"cell", "script", "html", "markdown", "json"} {
		if p, ok := w.Paths[k]; ok {
			if _, err := fmt.Fprintln(out, p); err != nil {
				return err
			}
		}
	}
	return nil
}
