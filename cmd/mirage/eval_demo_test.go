package main

import (
	"github.com/mirage-gpu/mirage/eval/report"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoScript runs scripts/demo.sh (what make demo runs after building)
// on a short synthetic trace: it must end by printing the report's path,
// and the report's numbers must equal those in its JSON.
func TestDemoScript(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds mirage and runs the demo script") // never in CI: make test does not pass -short
	}
	needXGBoost(t)
	bin := buildMirage(t)
	// Eight days: the script trains until 60% of the submissions' span
	// (4.8 days in), and the training chains start after the 48 h warm-up
	// and end, 48 h later, by then: injections from day 2 to day 2.8. (A
	// 3-day trace spans 3 days since #51, not about 5, and would leave
	// that window empty.)
	tr := filepath.Join(t.TempDir(), "synth.log")
	if _, stderr, code := runMirage(t, "traces", "synth", "--like", "ls6", "--days", "8", "--seed", "5", "--out", tr); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "demo out")
	cmd := exec.Command("../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), "MIRAGE="+bin, "TRACE="+tr, "OUT="+out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := "report: " + filepath.Join(out, "report", "report.html")
	if last := lines[len(lines)-1]; last != want {
		t.Fatalf("last line %q, want %q\n%s", last, want, b)
	}
	if !strings.Contains(string(b), "numbers in report.html and report.md match report.json") {
		t.Errorf("the demo did not check its report:\n%s", b)
	}
	if !strings.Contains(string(b), "expected wait ") {
		t.Errorf("the demo did not show a wait prediction:\n%s", b)
	}
	if !strings.Contains(string(b), "## Verdict, pair protocol, load ×1") || !strings.Contains(string(b), "| policy | size | load class |") {
		t.Errorf("the demo did not print the report's verdict:\n%s", b)
	}
	n, err := report.Verify(filepath.Join(out, "report"))
	if err != nil || n == 0 {
		t.Errorf("report.Verify: %d numbers, %v", n, err)
	}
}
