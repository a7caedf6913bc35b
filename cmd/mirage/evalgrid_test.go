package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// A cell (or its whole runs) kept in the grid directory from the same
// settings is not run again: mirage eval site-grid says so and leaves the file as it was, so
// a job array or a script that runs every cell may be started again and
// only runs what is missing. The kept file's stamp is the one the page
// tests compute for the same settings (eval.GridSpec.Stamp: the trace's
// name, the ranking period and its scale, the scored periods, the refit
// cadence, the seed), here of a two-job trace that could not feed a
// walk-forward: a run would fail, so a pass shows none was started.
func TestEvalSiteGridKeepsCell(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2022, 11, 1, 10, 0, 0, 0, time.UTC)
	tr := writeCSVTrace(t, []traces.Job{
		{ID: "a", User: "u", Submit: t0, Start: t0, End: t0.Add(time.Hour), TimeLimit: 2 * time.Hour, Nodes: 1},
		{ID: "b", User: "u", Submit: t0.Add(time.Minute), Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour), TimeLimit: 2 * time.Hour, Nodes: 1},
	})
	dir := t.TempDir()
	day := func(d string) time.Time {
		v, err := time.Parse("2006-01-02", d)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	spec := eval.GridSpec{TraceName: filepath.Base(tr), Rank: day("2022-11-15"), RankScale: 1.5, Scored: []time.Time{day("2022-12-01"), day("2022-12-10")},
		Retrain: 7 * 24 * time.Hour, Seed: 1}
	cells, err := eval.GridCells(nil)
	if err != nil {
		t.Fatal(err)
	}
	var fifo sim.GridCell
	for _, c := range cells {
		if c.Name == "fifo" {
			fifo = c
		}
	}
	stamp, err := spec.Stamp(fifo)
	if err != nil {
		t.Fatal(err)
	}
	path := eval.GridCellFile(dir, "fifo")
	if err := eval.WriteGridCell(path, &eval.GridCellResult{Cell: "fifo", Class: fifo.Class, Stamp: stamp}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runMirage(t, "eval", "site-grid", "--trace", tr, "--out", dir, "--rank", "2022-11-15", "--rank-scale", "1.5",
		"--months", "2022-12-01", "--until", "2022-12-10", "--cell", "fifo", "--cache", "-")
	if code != 0 || !strings.Contains(out, "cell fifo (fifo): kept in "+path) {
		t.Fatalf("exit %d, want the kept cell reported and nothing run:\n%s%s", code, out, stderr)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the kept cell's file changed (%v)", err)
	}
	// Another scale is another run: the kept cell does not stand for it,
	// so the cell runs, and fails on the two-job trace.
	_, stderr, code = runMirage(t, "eval", "site-grid", "--trace", tr, "--out", dir, "--rank", "2022-11-15", "--rank-scale", "2",
		"--months", "2022-12-01", "--until", "2022-12-10", "--cell", "fifo", "--cache", "-")
	if code == 0 || !strings.Contains(stderr, "grid cell fifo: walk-forward") {
		t.Errorf("a cell of other settings: exit %d, want its run started (and failed):\n%s", code, stderr)
	}
	// The cell's whole runs are kept the same way; their stamp names the
	// trace, the seed, the periods, the interval and the policies, not the
	// walk-forward's ranking period (--rank is not needed), as the page
	// test (whole-run.md) computes it with its own walk-forward periods.
	runs := eval.GridRunsFile(dir, "fifo")
	rstamp, err := (eval.GridSpec{TraceName: filepath.Base(tr), Seed: 1}).RunsStamp(fifo, []time.Time{day("2022-12-01"), day("2022-12-10")}, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := eval.WriteGridRuns(runs, &eval.GridRunsResult{Cell: "fifo", Class: fifo.Class, Interval: 48 * time.Hour, Stamp: rstamp}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runMirage(t, "eval", "site-grid", "--runs", "--trace", tr, "--out", dir, "--months", "2022-12-01", "--until", "2022-12-10",
		"--every", "48h", "--cell", "fifo", "--cache", "-")
	if code != 0 || !strings.Contains(out, "cell fifo (fifo): whole runs kept in "+runs) {
		t.Errorf("whole runs: exit %d, want the kept runs reported and nothing run:\n%s%s", code, out, stderr)
	}
}
