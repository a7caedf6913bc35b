package main

import (
	"encoding/json"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/report"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/traces"
)

// tinySweep writes a 3-day synthetic trace and a sweep over it: chain-2,
// 1-node chains of 2 h every 6 h after a 12 h warm-up, two policies at
// two load scales (4 cells). It returns the sweep path.
func tinySweep(t *testing.T, extra string) string {
	t.Helper()
	tr, _ := synthFile(t)
	dir := t.TempDir()
	sweep := filepath.Join(dir, "sweep.yaml")
	body := fmt.Sprintf(`title: tiny sweep
traces: [%q]
policies: [reactive, start-estimate]
load_scales: [0.8, 1.2]
protocol: chain-2
nodes: [1]
limit: 2h
warmup: 12h
interval: 6h
horizon: 12h
seed: 3
out: out
%s`, tr, extra)
	if err := os.WriteFile(sweep, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return sweep
}

// readReportJSON reads a report and blanks the command line and the
// version (the fields that differ between ways of producing the same report).
func readReportJSON(t *testing.T, path string) string {
	t.Helper()
	r, err := report.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Provenance.Command = nil
	// The version of the build that wrote it: a binary built with VCS
	// stamping (go build's default) says v0.0.0-DATE-COMMIT, the test
	// process "dev"; the figures are what must agree.
	r.Provenance.Mirage = ""
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEvalCommandFlags(t *testing.T) {
	t.Parallel()
	tr, _ := synthFile(t)
	out := filepath.Join(t.TempDir(), "rep")
	stdout, stderr, code := runMirage(t, "eval", "--trace", tr, "--policies", "reactive,lead,dependency", "--protocol", "chain-3",
		"--nodes", "1,8", "--limit", "3h", "--warmup", "12h", "--every", "8h", "--load-scale", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := strings.Join([]string{filepath.Join(out, "report.html"), filepath.Join(out, "report.md"), filepath.Join(out, "report.json")}, "\n") + "\n"
	if stdout != want {
		t.Errorf("stdout %q, want the three paths %q", stdout, want)
	}
	if stderr != "" {
		t.Errorf("stderr off a terminal: %q", stderr)
	}
	r, err := report.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	// 3 policies × 2 sizes, each chain of 3 segments gives hand-offs 1 and 2.
	segs := map[int]int{}
	for _, s := range r.Samples {
		segs[s.Segment]++
		if s.Protocol != "chain-3" || (s.Nodes != 1 && s.Nodes != 8) {
			t.Fatalf("sample %+v", s)
		}
	}
	if segs[1] == 0 || segs[1] != segs[2] || len(segs) != 2 || segs[1]%6 != 0 {
		t.Errorf("hand-offs by segment %v (want equal counts of 1 and 2, a multiple of 3 policies × 2 sizes)", segs)
	}
	if r.Provenance.Mirage == "" || len(r.Provenance.Command) == 0 || r.Provenance.Traces[0].Path != tr || len(r.Provenance.Windows) != 2 {
		t.Errorf("provenance %+v", r.Provenance)
	}
	// The report's numbers equal those in its JSON.
	vout, stderr, code := runMirage(t, "eval", "verify", out)
	if code != 0 || !strings.HasSuffix(vout, " numbers in report.html and report.md match report.json\n") {
		t.Errorf("verify: exit %d: %s%s", code, vout, stderr)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(strings.Replace(string(md), "| reactive | ", "| reactive | 9", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMirage(t, "eval", "verify", out); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "does not match") {
		t.Errorf("verify of an edited report: exit %d: %s", code, stderr)
	}

	// --json prints the paths and the headline.
	stdout, stderr, code = runMirage(t, "eval", "--trace", tr, "--policies", "reactive", "--protocol", "chain-2", "--nodes", "1",
		"--limit", "2h", "--warmup", "12h", "--every", "12h", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var js struct {
		Paths    map[string]string `json:"paths"`
		Headline []struct {
			Policy string `json:"policy"`
			N      int    `json:"n"`
		} `json:"headline"`
	}
	if err := json.Unmarshal([]byte(stdout), &js); err != nil || js.Paths["html"] != filepath.Join(out, "report.html") || len(js.Headline) != 1 || js.Headline[0].N == 0 {
		t.Errorf("--json output %s (%v)", stdout, err)
	}
}

func TestEvalCommandBadInput(t *testing.T) {
	t.Parallel()
	tr, _ := synthFile(t)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	_ = os.WriteFile(bad, []byte("id,submit\nx,notatime\n"), 0o644)
	badSweep := filepath.Join(t.TempDir(), "s.yaml")
	_ = os.WriteFile(badSweep, []byte("traces: [a]\npolicies: [reactive]\nbogus: 1\n"), 0o644)
	out := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no out", []string{"eval", "--trace", tr, "--policies", "reactive"}, cmdutil.ExitUsage, "need --trace, --policies and --out"},
		{"protocol", []string{"eval", "--trace", tr, "--policies", "reactive", "--out", out, "--protocol", "chain-1"}, cmdutil.ExitUsage, "protocol"},
		{"from", []string{"eval", "--trace", tr, "--policies", "reactive", "--out", out, "--from", "yesterday"}, cmdutil.ExitUsage, "--from"},
		{"policy", []string{"eval", "--trace", tr, "--policies", "nosuch", "--out", out, "--protocol", "chain-2", "--nodes", "1"}, cmdutil.ExitUsage, "nosuch"},
		{"trace", []string{"eval", "--trace", bad, "--policies", "reactive", "--out", out, "--protocol", "chain-2"}, cmdutil.ExitBadInput, "bad.csv"},
		{"missing trace", []string{"eval", "--trace", "/nonexistent.csv", "--policies", "reactive", "--out", out, "--protocol", "chain-2"}, cmdutil.ExitBadInput, "nonexistent"},
		{"sweep", []string{"eval", "--sweep", badSweep}, cmdutil.ExitBadInput, "bogus"},
		{"sweep and flags", []string{"eval", "--sweep", badSweep, "--policies", "x"}, cmdutil.ExitUsage, "cannot be combined"},
		{"cell without sweep", []string{"eval", "--cell", "1", "--trace", tr, "--policies", "reactive", "--out", out}, cmdutil.ExitUsage, "need --sweep"},
		{"cell range", []string{"eval", "--sweep", tinySweep(t, ""), "--cell", "4"}, cmdutil.ExitUsage, "cells 0 to 3"},
		{"merge nothing", []string{"eval", "merge", "--out", out, t.TempDir()}, cmdutil.ExitBadInput, "no *.json"},
		{"merge not a report", []string{"eval", "merge", "--out", out, badSweep}, cmdutil.ExitBadInput, "report"},
	}
	for _, c := range cases {
		_, stderr, code := runMirage(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q; want %d mentioning %q", c.name, code, stderr, c.code, c.msg)
		}
	}
}

// TestEvalSweepCellsMergeEqualsSingle runs a sweep's cells one by one (as
// array tasks do, each a fresh command), merges them, and compares with
// the single-process run of the same sweep.
func TestEvalSweepCellsMergeEqualsSingle(t *testing.T) {
	t.Parallel()
	sweep := tinySweep(t, "")
	cellsOut := filepath.Join(t.TempDir(), "cells-run")
	for i := range 4 {
		stdout, stderr, code := runMirage(t, "eval", "--sweep", sweep, "--cell", fmt.Sprint(i), "--out", cellsOut)
		if code != 0 {
			t.Fatalf("cell %d: exit %d: %s", i, code, stderr)
		}
		if want := eval.CellFile(cellsOut, i) + "\n"; stdout != want {
			t.Errorf("cell %d printed %q, want %q", i, stdout, want)
		}
	}
	merged := filepath.Join(t.TempDir(), "merged")
	if _, stderr, code := runMirage(t, "eval", "merge", "--out", merged, filepath.Join(cellsOut, "cells")); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	single := filepath.Join(t.TempDir(), "single")
	if _, stderr, code := runMirage(t, "eval", "--sweep", sweep, "--out", single); code != 0 {
		t.Fatalf("single: exit %d: %s", code, stderr)
	}
	a, b := readReportJSON(t, filepath.Join(merged, "report.json")), readReportJSON(t, filepath.Join(single, "report.json"))
	if a != b {
		t.Fatal("merged report differs from the single-process report")
	}
	r, _ := report.ReadFile(filepath.Join(single, "report.json"))
	if len(r.Provenance.Cells) != 4 || len(r.Samples) == 0 {
		t.Errorf("%d cells, %d samples", len(r.Provenance.Cells), len(r.Samples))
	}
	// Merging a cell twice is refused.
	if _, stderr, code := runMirage(t, "eval", "merge", "--out", merged, filepath.Join(cellsOut, "cells"), eval.CellFile(cellsOut, 0)); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "appears in reports") {
		t.Errorf("duplicate cell: exit %d: %s", code, stderr)
	}
}

func TestEvalEmitArray(t *testing.T) {
	t.Parallel()
	sweep := tinySweep(t, "slurm:\n  partition: debug\n  time: \"00:04:00\"\n  cpus: 1\n")
	out := filepath.Join(t.TempDir(), "arr")
	stdout, stderr, code := runMirage(t, "eval", "--sweep", sweep, "--emit-array", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	script := filepath.Join(out, "eval-array.sbatch")
	if stdout != script+"\n" {
		t.Errorf("stdout %q", stdout)
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=0-3\n", "#SBATCH --partition=debug\n", " eval --sweep " + sweep + " --cell \"$SLURM_ARRAY_TASK_ID\""} {
		if !strings.Contains(string(b), want) {
			t.Errorf("script lacks %q:\n%s", want, b)
		}
	}
	for _, d := range []string{"logs", "cells"} {
		if st, err := os.Stat(filepath.Join(out, d)); err != nil || !st.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
	bad := tinySweep(t, "slurm:\n  partition: \"debug --wrap=x\"\n")
	if _, stderr, code := runMirage(t, "eval", "--sweep", bad, "--emit-array", "--out", out); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "partition") {
		t.Errorf("bad partition: exit %d: %s", code, stderr)
	}
}

// TestEvalCommandPair runs the published pair protocol (the default) with
// the provisioner's baselines, the models package's average and oracle.
func TestEvalCommandPair(t *testing.T) {
	t.Parallel()
	tr, _ := synthFile(t)
	out := filepath.Join(t.TempDir(), "pair")
	_, stderr, code := runMirage(t, "eval", "--trace", tr, "--policies", "reactive,average,oracle", "--nodes", "1,4",
		"--limit", "6h", "--warmup", "12h", "--every", "12h", "--load-scale", "1,1.5", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := report.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range r.Samples {
		count[fmt.Sprintf("%s x%g", s.Policy, s.LoadScale)]++
		if s.Protocol != "pair" || s.Segment != 1 || s.LoadClass == "" {
			t.Fatalf("sample %+v", s)
		}
	}
	// Every policy measured on the same hand-offs at each scale.
	for _, sc := range []string{"x1", "x1.5"} {
		n := count["reactive "+sc]
		if n == 0 || count["average "+sc] != n || count["oracle "+sc] != n {
			t.Errorf("samples per policy at %s: %v", sc, count)
		}
	}
	if _, stderr, code := runMirage(t, "eval", "verify", out); code != 0 {
		t.Errorf("verify: %s", stderr)
	}
	// Learned policies need their models: a clear error before any
	// simulation, bad input (3) as in every command that reads a model (#51).
	_, stderr, code = runMirage(t, "eval", "--trace", tr, "--policies", "xgb", "--nodes", "1", "--models", t.TempDir(), "--out", out)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "mirage train") {
		t.Errorf("xgb without a model: exit %d: %s", code, stderr)
	}
}

// TestEvalSkipBad: a trace with a malformed row fails eval (exit 3) unless
// --skip-bad, which leaves the row out and says so in the report's
// provenance and JSON.
func TestEvalSkipBad(t *testing.T) {
	t.Parallel()
	tr, _ := synthFile(t)
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.log")
	lines := strings.SplitAfter(string(b), "\n")
	lines = slices.Insert(lines, 3, "this row has no fields mirage reads\n")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	args := []string{"eval", "--trace", bad, "--format", "ls6", "--policies", "reactive", "--protocol", "chain-2", "--nodes", "1",
		"--limit", "2h", "--warmup", "12h", "--every", "12h", "--out", out}
	if _, stderr, code := runMirage(t, args...); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "--skip-bad") || !strings.Contains(stderr, "bad.log:4") {
		t.Errorf("malformed row without --skip-bad: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runMirage(t, append(args, "--skip-bad")...); code != 0 {
		t.Fatalf("--skip-bad: exit %d: %s", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "1 malformed rows skipped") {
		t.Errorf("report.md does not say a row was skipped (%v)", err)
	}
	js, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || !strings.Contains(string(js), `"skipped": 1`) {
		t.Errorf("report.json does not count the skipped row (%v)", err)
	}
}

// TestEvalNoSamplesFails: an experiment that measures no hand-off writes
// its report and exits non-zero, saying why. Four nodes (slurm.conf over
// the default preset: priority/basic, first come, first served); the trace
// holds ten 4-node jobs of 48 h, all submitted at t0 and run back to back
// until day 20, and a 1-node job submitted on day 19. Chains (1 node, 6 h)
// are injected daily from day 1 to day 8: each predecessor queues behind
// the ten big jobs (submitted before it), and no backfill hole exists (the
// nodes are never idle), so it could start only on day 20, after the
// protocol's 7-day start deadline: no sample.
func TestEvalNoSamplesFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("NodeName=n[1-4] CPUs=8\nPartitionName=batch Nodes=ALL Default=YES OverSubscribe=EXCLUSIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var jobs []traces.Job
	for i := range 10 {
		start := t0.Add(time.Duration(i) * 48 * time.Hour)
		jobs = append(jobs, traces.Job{ID: strconv.Itoa(i + 1), User: "big", Account: "a", Submit: t0, Start: start, End: start.Add(48 * time.Hour),
			TimeLimit: 48 * time.Hour, Nodes: 4})
	}
	late := t0.Add(19 * 24 * time.Hour)
	jobs = append(jobs, traces.Job{ID: "11", User: "late", Account: "a", Submit: late, Start: t0.Add(20 * 24 * time.Hour), End: t0.Add(20*24*time.Hour + time.Hour),
		TimeLimit: time.Hour, Nodes: 1})
	tr := filepath.Join(dir, "busy.csv")
	var b strings.Builder
	if err := traces.WriteJobs(&b, traces.FormatCSV, jobs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	_, stderr, code := runMirage(t, "eval", "--trace", tr, "--preset", "default", "--slurm-conf", conf, "--policies", "reactive",
		"--nodes", "1", "--limit", "6h", "--warmup", "24h", "--every", "24h", "--until", "2026-01-10", "--out", out)
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "no samples") || !strings.Contains(stderr, "start deadline") || !strings.Contains(stderr, out) {
		t.Errorf("exit %d, stderr %q; want %d naming no samples, the start deadline and the report's directory", code, stderr, cmdutil.ExitFailure)
	}
	r, err := report.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("the report was not written: %v", err)
	}
	if len(r.Samples) != 0 || r.Provenance.Cells[0].Params["unmeasured"] != "8" {
		t.Errorf("report: %d samples, unmeasured %q; want none and 8 (days 1 to 8)", len(r.Samples), r.Provenance.Cells[0].Params["unmeasured"])
	}
	// Merging such a report fails alike.
	if _, stderr, code := runMirage(t, "eval", "merge", "--out", filepath.Join(dir, "merged"), filepath.Join(out, "report.json")); code != cmdutil.ExitFailure || !strings.Contains(stderr, "no samples") {
		t.Errorf("merge: exit %d, stderr %q", code, stderr)
	}
}

// TestEvalEmptyWindowSaysWhy (#51): a trace too short for the warm-up, or
// a --from after --until, is refused (exit 2) with where each end of the
// window came from and what to change, not an interval that ends before
// it starts.
func TestEvalEmptyWindowSaysWhy(t *testing.T) {
	t.Parallel()
	tr, _ := synthFile(t) // submissions on 2022-11-01 .. 11-03 (US Central)
	for _, c := range []struct {
		args []string
		want []string
	}{
		// A 30-day warm-up: the window would start after the last submit
		// (held jobs are replayed at their eligible time, up to 2022-11-15).
		{[]string{"--warmup", "720h"}, []string{"the 720h warm-up", "and end at", "(the trace's last submit)", "give a longer trace, or a shorter --warmup"}},
		// --until before the first start + the default warm-up (2022-11-03T05:15Z).
		{[]string{"--until", "2022-11-02T00:00:00Z"}, []string{"end at 2022-11-02T00:00:00Z (--until)", "the 48h warm-up", "give an --until after 2022-11-03T05:15:54Z, or a shorter --warmup"}},
	} {
		args := append([]string{"eval", "--trace", tr, "--policies", "reactive", "--out", filepath.Join(t.TempDir(), "rep")}, c.args...)
		_, stderr, code := runMirage(t, args...)
		if code != cmdutil.ExitUsage {
			t.Errorf("%q: exit %d, want %d: %s", c.args, code, cmdutil.ExitUsage, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr %q does not say %q", c.args, stderr, w)
			}
		}
		if strings.Contains(stderr, "no injection in [") {
			t.Errorf("%q: stderr still gives a bare interval: %q", c.args, stderr)
		}
	}
}
