package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"github.com/mirage-gpu/mirage/eval/report"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/traces"
)

func TestExperimentCells(t *testing.T) {
	e := &Experiment{Traces: []string{"/a/ls6.log.gz", "/b/ls6.csv", "/c/other trace.csv"}, Policies: []string{"reactive", "xgb"},
		LoadScales: []float64{0.8, 1}, Protocol: "chain-3"}
	if err := e.Normalize(); err != nil {
		t.Fatal(err)
	}
	cells := e.Cells()
	if len(cells) != 12 { // 3 traces × 2 scales × 2 policies
		t.Fatalf("%d cells", len(cells))
	}
	want := []string{"t1-ls6/x0.8/chain-3/reactive", "t1-ls6/x0.8/chain-3/xgb", "t1-ls6/x1/chain-3/reactive"}
	for i, w := range want {
		if cells[i].Name != w || cells[i].Index != i {
			t.Errorf("cell %d = %q (index %d), want %q", i, cells[i].Name, cells[i].Index, w)
		}
	}
	if c := cells[11]; c.Name != "other_trace/x1/chain-3/xgb" || c.Cell != "other_trace/x1/chain-3" || c.Trace != "/c/other trace.csv" || c.LoadScale != 1 {
		t.Errorf("last cell %+v", c)
	}
	// defaults
	if e.Limit != 48*time.Hour || e.Warmup != 48*time.Hour || e.Interval != 4*time.Hour || e.Preset != "ls6" || e.Seed != 1 ||
		e.Bootstrap.Seed != 1 || e.Bootstrap.Below != 100 || !reflect.DeepEqual(e.Nodes, []int{1, 8}) {
		t.Errorf("defaults: %+v", e)
	}
}

func TestExperimentNormalizeRejects(t *testing.T) {
	ok := func() *Experiment { return &Experiment{Traces: []string{"t"}, Policies: []string{"reactive"}} }
	cases := map[string]func(*Experiment){
		"no traces":    func(e *Experiment) { e.Traces = nil },
		"no policies":  func(e *Experiment) { e.Policies = nil },
		"dup policy":   func(e *Experiment) { e.Policies = []string{"a", "a"} },
		"slash":        func(e *Experiment) { e.Policies = []string{"a/b"} },
		"scale":        func(e *Experiment) { e.LoadScales = []float64{0} },
		"protocol":     func(e *Experiment) { e.Protocol = "chain-1" },
		"nodes":        func(e *Experiment) { e.Nodes = []int{0} },
		"limit":        func(e *Experiment) { e.Limit = -time.Hour },
		"work in pair": func(e *Experiment) { e.Work = time.Hour },
		"no-handoff in chain": func(e *Experiment) {
			e.Protocol, e.NoHandOff = "chain-2", true
		},
		"negative restart": func(e *Experiment) { e.Protocol, e.Restart = metrics.ProtocolRun, -time.Minute },
		"workload":         func(e *Experiment) { e.Protocol, e.Workload = metrics.ProtocolRun, "batch" },
		"workload in pair": func(e *Experiment) { e.Workload = provisioner.WorkloadService },
		"window": func(e *Experiment) {
			e.From, e.Until = mustMoment(t, "2023-02-01"), mustMoment(t, "2023-01-01")
		},
	}
	for name, mut := range cases {
		e := ok()
		mut(e)
		if err := e.Normalize(); !errors.Is(err, protocol.ErrBadSetup) {
			t.Errorf("%s: %v, want ErrBadSetup", name, err)
		}
	}
}

const sweepYAML = `title: tiny
traces: [trace.csv]
policies: [reactive, lead]
load_scales: [0.5, 1.5]
protocol: chain-2
from: 2026-01-05T00:00:00Z
until: 2026-01-07T00:00:00Z
nodes: [1]
limit: 2h
warmup: 12h
interval: 6h
horizon: 12h
seed: 7
out: results
slurm:
  partition: debug
  time: "00:04:00"
  cpus: 1
`

func writeSweep(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseSweep(t *testing.T) {
	dir := t.TempDir()
	e, err := ParseSweep(writeSweep(t, dir, sweepYAML))
	if err != nil {
		t.Fatal(err)
	}
	if e.Traces[0] != filepath.Join(dir, "trace.csv") || e.Out != filepath.Join(dir, "results") {
		t.Errorf("paths not resolved against the sweep's directory: %v %s", e.Traces, e.Out)
	}
	if e.Limit != 2*time.Hour || e.Warmup != 12*time.Hour || e.Cycle != 10*time.Minute || e.Seed != 7 || e.Bootstrap.Seed != 7 ||
		!e.From.In(nil).Equal(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)) || e.Slurm.Partition != "debug" || e.Slurm.Time != "00:04:00" {
		t.Errorf("parsed %+v", e)
	}
	if n := len(e.Cells()); n != 4 {
		t.Errorf("%d cells", n)
	}
	for name, body := range map[string]string{
		"unknown key": sweepYAML + "bogus: 1\n",
		"bad scale":   strings.Replace(sweepYAML, "[0.5, 1.5]", "[-1]", 1),
		"bad time":    strings.Replace(sweepYAML, "limit: 2h", "limit: two hours", 1),
		"empty":       "",
		"no policies": "traces: [a]\n",
	} {
		_, err := ParseSweep(writeSweep(t, dir, body))
		if !errors.Is(err, ErrBadSweep) {
			t.Errorf("%s: %v, want ErrBadSweep", name, err)
		}
		if name == "unknown key" && !strings.Contains(err.Error(), "line 19") {
			t.Errorf("unknown key error lacks its line: %v", err)
		}
	}
	if _, err := ParseSweep(filepath.Join(dir, "none.yaml")); !errors.Is(err, ErrBadSweep) {
		t.Errorf("missing file: %v", err)
	}
}

func TestArrayScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's here")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sweep := writeSweep(t, dir, sweepYAML)
	e, err := ParseSweep(sweep)
	if err != nil {
		t.Fatal(err)
	}
	// The output directory may not hold a quote (it goes into #SBATCH --output).
	if _, err := ArrayScript(e, sweep, "/usr/bin/mirage", "v1"); !errors.Is(err, ErrBadSweep) {
		t.Errorf("quote in out: %v", err)
	}
	out := filepath.Join(t.TempDir(), "out")
	e.Out = out
	fake := filepath.Join(t.TempDir(), "fake mirage")
	// A stand-in for mirage that prints its arguments one per line.
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := ArrayScript(e, sweep, fake, "v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"#SBATCH --array=0-3\n", "#SBATCH --partition=debug\n", "#SBATCH --time=00:04:00\n", "#SBATCH --cpus-per-task=1\n",
		"#SBATCH --output=" + out + "/logs/cell-%a.out\n",
	} {
		if !strings.Contains(script, line) {
			t.Errorf("script lacks %q:\n%s", line, script)
		}
	}
	// Run it as sbatch would, with the array variables set: the arguments
	// arrive intact whatever the paths hold.
	sh := filepath.Join(t.TempDir(), "array.sh")
	_ = os.WriteFile(sh, []byte(script), 0o755)
	cmd := exec.Command("/bin/bash", sh)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=3", "SLURM_CPUS_PER_TASK=1")
	got, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{"eval", "--sweep", sweep, "--cell", "3", "--workers", "1", "--out", out}, "\n") + "\n"
	if string(got) != want {
		t.Errorf("arguments:\n%s\nwant:\n%s", got, want)
	}
	// Values that would inject into #SBATCH lines are refused.
	for _, bad := range []func(*Experiment){
		func(e *Experiment) { e.Slurm.Partition = "debug --wrap=rm" },
		func(e *Experiment) { e.Slurm.Account = "a\n#SBATCH --x" },
		func(e *Experiment) { e.Slurm.Time = "1h; rm -rf /" },
		func(e *Experiment) { e.Slurm.Mem = "4 G" },
		func(e *Experiment) { e.Out = "relative" },
	} {
		e2 := *e
		bad(&e2)
		if _, err := ArrayScript(&e2, sweep, fake, "v1"); !errors.Is(err, ErrBadSweep) {
			t.Errorf("accepted %+v: %v", e2.Slurm, err)
		}
	}
}

// tinyTrace writes a synthetic LS6-like trace of two days.
func tinyTrace(t testing.TB, dir string) (string, []traces.Job) {
	t.Helper()
	jobs, err := traces.Synth("ls6", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trace.csv")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := traces.NewCSVWriter(fh)
	for _, j := range jobs {
		if err := w.Write(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	return p, jobs
}

// TestRunAllEqualsSeparateCells: the single-process run of a sweep equals
// the merge of its cells run in separate processes (fresh runtimes, no
// shared caches), as job-array tasks run them.
func TestRunAllEqualsSeparateCells(t *testing.T) {
	for _, protocol := range []string{"chain-2", "pair"} {
		t.Run(protocol, func(t *testing.T) { runAllEqualsSeparateCells(t, protocol) })
	}
}

func runAllEqualsSeparateCells(t *testing.T, protocol string) {
	dir := t.TempDir()
	tinyTrace(t, dir)
	body := strings.Replace(sweepYAML, "from: 2026-01-05T00:00:00Z\nuntil: 2026-01-07T00:00:00Z\n", "", 1)
	body = strings.Replace(body, "protocol: chain-2", "protocol: "+protocol, 1)
	e, err := ParseSweep(writeSweep(t, dir, body))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	whole, err := RunAll(ctx, e, &Runtime{Version: "test", Command: []string{"mirage", "eval"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var parts []*report.Report
	for _, c := range e.Cells() {
		r, err := RunCell(ctx, e, c, &Runtime{Version: "test", Command: []string{"mirage", "eval", "--cell", c.Name}, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		// through JSON, as the array's files are
		var buf strings.Builder
		_ = r.WriteJSON(&buf)
		back, err := report.Read(strings.NewReader(buf.String()), c.Name)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
	}
	merged, err := report.Merge("", []string{"mirage", "eval"}, parts...)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(whole)
	b, _ := json.Marshal(merged)
	if string(a) != string(b) {
		t.Fatal("merged cells differ from the single-process run")
	}
	// Something was measured (two policies × two scales) and classified.
	t.Logf("%d samples", len(whole.Samples))
	if len(whole.Samples) == 0 || len(whole.Provenance.Cells) != 4 {
		t.Fatalf("%d samples, %d cells", len(whole.Samples), len(whole.Provenance.Cells))
	}
	for _, s := range whole.Samples {
		if s.LoadClass == "" || s.Protocol != protocol || s.Segment != 1 || (s.LoadScale != 0.5 && s.LoadScale != 1.5) {
			t.Errorf("sample %+v", s)
		}
	}
	if whole.Provenance.Traces[0].SHA256 == "" || whole.Provenance.Traces[0].Jobs == 0 {
		t.Errorf("trace provenance %+v", whole.Provenance.Traces)
	}
}

// TestLS6RunsSweepFile: the documented whole-run sweep parses into the run
// protocol with the training workload, 7 days of work, C = R = 5 min.
func TestLS6RunsSweepFile(t *testing.T) {
	e, err := ParseSweep(filepath.Join("sweeps", "ls6-runs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Protocol != metrics.ProtocolRun || e.Workload != provisioner.WorkloadTraining || e.Work != 168*time.Hour || e.Restart != 5*time.Minute ||
		e.Checkpoint != 5*time.Minute || e.NoHandOff || len(e.Cells()) != len(e.Policies) {
		t.Errorf("sweep %+v", e)
	}
}

// TestLS6SweepFile: the documented sweep parses, and its trace path
// resolves to the shared LS6 file where the shared traces are.
func TestLS6SweepFile(t *testing.T) {
	e, err := ParseSweep(filepath.Join("sweeps", "ls6.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Cells()) != len(e.Policies) || e.Protocol != "pair" || !strings.HasSuffix(e.Models, "/ls6-models") || e.Limit != 48*time.Hour || e.Warmup != 48*time.Hour ||
		e.Interval != 4*time.Hour || !reflect.DeepEqual(e.Nodes, []int{1, 8}) || !e.From.In(nil).Equal(time.Date(2023, 2, 1, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("sweep %+v", e)
	}
	if _, err := ArrayScript(e, mustAbs(t, filepath.Join("sweeps", "ls6.yaml")), "/usr/local/bin/mirage", "test"); err != nil {
		t.Errorf("array script: %v", err)
	}
	want, _ := filepath.Abs(testenv.SharedTrace(t, testenv.LS6))
	got, _ := filepath.Abs(e.Traces[0])
	if got != want {
		t.Errorf("trace resolves to %s, the shared file is %s", got, want)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRunOneCell: Run with a cell runs that cell alone and writes its report
// where the array's merge reads it; a cell the sweep lacks is a setup error.
func TestRunOneCell(t *testing.T) {
	dir := t.TempDir()
	tinyTrace(t, dir)
	body := strings.Replace(sweepYAML, "from: 2026-01-05T00:00:00Z\nuntil: 2026-01-07T00:00:00Z\n", "", 1)
	e, err := ParseSweep(writeSweep(t, dir, body))
	if err != nil {
		t.Fatal(err)
	}
	e.Out = filepath.Join(dir, "out")
	var seen []string
	onCell := func(c CellSpec, i, n int) { seen = append(seen, fmt.Sprintf("%d/%d %s", i, n, c.Name)) }
	n := len(e.Cells()) // 2 policies × 2 load scales
	if _, err := Run(context.Background(), e, n, &Runtime{Version: "test"}, onCell); !errors.Is(err, protocol.ErrBadSetup) ||
		err.Error() != fmt.Sprintf("--cell %d: the sweep has cells 0 to %d", n, n-1) || seen != nil {
		t.Fatalf("cell %d of %d: %v (called back %v)", n, n, err, seen)
	}
	w, err := Run(context.Background(), e, 1, &Runtime{Version: "test", Workers: 1}, onCell)
	if err != nil {
		t.Fatal(err)
	}
	want := CellFile(e.Out, 1)
	if w.Paths["cell"] != want || len(w.Paths) != 1 || w.Report != nil || len(seen) != 1 || seen[0] != fmt.Sprintf("1/%d %s", n, e.Cells()[1].Name) {
		t.Fatalf("wrote %v, called back %v; want only %s", w.Paths, seen, want)
	}
	if reports, err := ReadReports([]string{want}); err != nil || len(reports) != 1 || len(reports[0].Provenance.Cells) != 1 {
		t.Fatalf("cell report: %v", err)
	}
}

// TestWriteArray: the script goes to OUT/eval-array.sbatch, executable, with
// OUT/logs and OUT/cells made, and the cell count is reported.
func TestWriteArray(t *testing.T) {
	dir := t.TempDir()
	e, err := ParseSweep(writeSweep(t, dir, sweepYAML))
	if err != nil {
		t.Fatal(err)
	}
	e.Out = filepath.Join(dir, "out")
	w, err := WriteArray(e, filepath.Join(dir, "sweep.yaml"), "/usr/bin/mirage", "v1")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(e.Out, "eval-array.sbatch")
	if w.Paths["script"] != script || w.Paths["cells"] != "4" || len(w.Paths) != 2 { // 2 policies × 2 load scales
		t.Errorf("wrote %v", w.Paths)
	}
	if st, err := os.Stat(script); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("script: %v, %v", st, err)
	}
	for _, d := range []string{"logs", "cells"} {
		if st, err := os.Stat(filepath.Join(e.Out, d)); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// mustMoment parses a moment (traces.ParseMoment).
func mustMoment(t *testing.T, s string) traces.Moment {
	t.Helper()
	m, err := traces.ParseMoment(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
