package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report opens with a verdict per experiment: the runnable policy with
// the lowest mean |gap| (never the oracle, even when it is lower), per load
// class, before any other table; provenance comes last; the verdict's
// numbers pass VerifyReport like the rest. synthSamples makes xgb 0.4×
// reactive and average 0.7× on every hand-off, so xgb is the answer; an
// oracle at 0.1× is added here and must not be chosen.
func TestReportVerdict(t *testing.T) {
	samples := synthSamples(40, 9)
	var withOracle []Sample
	for _, s := range samples {
		withOracle = append(withOracle, s)
		if s.Policy == "reactive" {
			o := s
			o.Policy, o.Gap = "oracle", s.Gap/10
			withOracle = append(withOracle, o)
		}
	}
	r, err := NewReport("Verdict", []string{"reactive", "average", "xgb", "oracle"}, Provenance{Mirage: "test"}, withOracle, Bootstrap{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.experiments() {
		if v := r.verdict(e); v.Policy != "xgb" || len(v.Table.Rows) < 2 || v.Table.Rows[0][2].Text != AllClasses {
			t.Errorf("%s ×%g: verdict %q with %d rows; want xgb, all classes first", e.Protocol, e.LoadScale, v.Policy, len(v.Table.Rows))
		}
	}
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := VerifyReport(dir); err != nil || n == 0 {
		t.Fatalf("verify: %d numbers, %v", n, err)
	}
	for _, f := range []string{MarkdownFile, HTMLFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		verdict, headline, prov := strings.Index(s, "Verdict, pair protocol, load ×1"), strings.Index(s, "All hand-offs"), strings.LastIndex(s, "Provenance")
		if verdict < 0 || headline < verdict || prov < headline || !strings.Contains(s, "Use xgb:") {
			t.Errorf("%s: verdict at %d, first table at %d, provenance at %d; want verdict (\"Use xgb:\") first, provenance last", f, verdict, headline, prov)
		}
	}
	// Reactive best: the verdict says to keep it.
	var flat []Sample
	for _, s := range samples {
		if s.Policy == "xgb" {
			s.Gap = s.Gap*3 + 3600e9
		}
		flat = append(flat, s)
	}
	r2, err := NewReport("Keep", []string{"reactive", "xgb"}, Provenance{Mirage: "test"}, onlyPolicies(flat, "reactive", "xgb"), Bootstrap{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v := r2.verdict(r2.experiments()[0]); v.Policy != "reactive" || !strings.HasPrefix(v.Why, "Keep reactive") {
		t.Errorf("reactive best: verdict %q (%s)", v.Policy, v.Why)
	}
}

func onlyPolicies(in []Sample, names ...string) []Sample {
	var out []Sample
	for _, s := range in {
		for _, n := range names {
			if s.Policy == n {
				out = append(out, s)
			}
		}
	}
	return out
}
