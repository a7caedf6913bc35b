package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/traces"
)

// synthFile writes a 3-day synthetic LS6-format trace and returns its path
// and job count.
func synthFile(t *testing.T) (string, int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "synth.log")
	if _, stderr, code := runMirage(t, "traces", "synth", "--like", "ls6", "--days", "3", "--seed", "5", "--out", p); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, stderr)
	}
	r, err := traces.Open(p, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, err := range traces.All(r) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return p, n
}

// corruptRow appends an 11th field to data row k (file line 3+k).
func corruptRow(t *testing.T, src string, k int) (string, int) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	lines[2+k] += "\t810653"
	p := filepath.Join(t.TempDir(), "corrupt.log")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, 3 + k
}

func TestTracesStatsCorruptedCopy(t *testing.T) {
	t.Parallel()
	good, n := synthFile(t)
	if n < 100 {
		t.Fatalf("synth gave %d jobs", n)
	}
	out, _, code := runMirage(t, "traces", "stats", good)
	if code != 0 || !strings.HasPrefix(out, "jobs: "+itoaTest(n)+"\n") {
		t.Fatalf("stats on the good copy: exit %d, output %q", code, out)
	}

	bad, line := corruptRow(t, good, 10)
	_, stderr, code := runMirage(t, "traces", "stats", bad)
	want := "mirage: " + bad + ":" + itoaTest(line) + ": field row: want 10 tab-separated fields, got \"11 fields\"\n"
	if code != cmdutil.ExitBadInput || stderr != want {
		t.Errorf("corrupted copy: exit %d stderr %q; want exit 3 and %q", code, stderr, want)
	}

	out, stderr, code = runMirage(t, "traces", "stats", "--skip-bad", bad)
	if code != 0 || !strings.HasPrefix(out, "jobs: "+itoaTest(n-1)+"\n") || !strings.Contains(out, "skipped 1 malformed rows\n") ||
		!strings.Contains(stderr, "skipped 1 malformed rows") {
		t.Errorf("--skip-bad: exit %d stdout %q stderr %q", code, out, stderr)
	}

	out, _, code = runMirage(t, "traces", "stats", "--skip-bad", "--json", bad)
	var s struct {
		Jobs    int `json:"jobs"`
		Skipped int `json:"skipped_malformed_rows"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 || s.Jobs != n-1 || s.Skipped != 1 {
		t.Errorf("--json: exit %d, %+v (%v), want %d jobs and 1 skipped", code, s, err, n-1)
	}
}

func TestTracesConvertAtomic(t *testing.T) {
	t.Parallel()
	good, n := synthFile(t)
	bad, _ := corruptRow(t, good, 3)
	dir := t.TempDir()
	outPath := filepath.Join(dir, "out.csv")
	_, _, code := runMirage(t, "traces", "convert", bad, "--out", outPath)
	if code != cmdutil.ExitBadInput {
		t.Errorf("convert of a corrupted file: exit %d, want 3", code)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed convert left %d files behind (%v)", len(entries), entries[0].Name())
	}
	_, stderr, code := runMirage(t, "traces", "convert", "--skip-bad", bad, "--out", outPath)
	if code != 0 || !strings.Contains(stderr, "skipped 1 malformed rows") {
		t.Fatalf("convert --skip-bad: exit %d: %s", code, stderr)
	}
	r, err := traces.Open(outPath, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Format() != traces.FormatCSV {
		t.Errorf("converted file sniffed as %q", r.Format())
	}
	m := 0
	for _, err := range traces.All(r) {
		if err != nil {
			t.Fatal(err)
		}
		m++
	}
	if m != n-1 {
		t.Errorf("read back %d jobs, want %d", m, n-1)
	}
}

func TestTracesSynthStdoutDeterministic(t *testing.T) {
	t.Parallel()
	a, _, c1 := runMirage(t, "traces", "synth", "--days", "2", "--seed", "9")
	b, _, c2 := runMirage(t, "traces", "synth", "--days", "2", "--seed", "9")
	if c1 != 0 || c2 != 0 || a != b || !strings.HasPrefix(a, itoaTest(strings.Count(a, "\n")-1)+"\n") {
		t.Errorf("synth to stdout: exits %d %d, equal %v, head %q", c1, c2, a == b, a[:min(len(a), 40)])
	}
	if _, _, code := runMirage(t, "traces", "synth", "--like", "philly"); code != cmdutil.ExitUsage {
		t.Errorf("--like philly: exit %d, want %d", code, cmdutil.ExitUsage)
	}
	if _, _, code := runMirage(t, "traces", "stats", filepath.Join(t.TempDir(), "missing")); code != cmdutil.ExitBadInput {
		t.Errorf("missing file: exit %d, want %d", code, cmdutil.ExitBadInput)
	}
}

func itoaTest(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
