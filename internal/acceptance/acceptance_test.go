package acceptance

import (
	"fmt"
	"slices"
	"testing"
)

// errRecorder is a testing.TB that records Errorf (which does not stop).
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Helper() {}
func (r *errRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestLines: "yes" lines pass, each "no" line fails the test once, quoted
// with the page's name; comparison lines are never asserted.
func TestLines(t *testing.T) {
	l := New("docs/results/x.md")
	got := []string{
		l.Verdict(true, "a ≤ 1: 0.5"),
		l.Verdict(false, "b ≤ 1: 2.0"),
		Compared(false),
		Target(true),
		l.Verdict(false, "c ≥ 3: 1"),
	}
	want := []string{"yes", "**no**", "not met (for comparison, not asserted)", "met (a target, not asserted)", "**no**"}
	if !slices.Equal(got, want) {
		t.Errorf("verdicts %q, want %q", got, want)
	}
	r := &errRecorder{}
	l.Check(r)
	wantErrs := []string{"docs/results/x.md: acceptance line not met: b ≤ 1: 2.0", "docs/results/x.md: acceptance line not met: c ≥ 3: 1"}
	if !slices.Equal(r.errs, wantErrs) {
		t.Errorf("errors %q, want %q", r.errs, wantErrs)
	}
	ok := New("y.md")
	ok.Verdict(true, "fine")
	r = &errRecorder{}
	ok.Check(r)
	if len(r.errs) != 0 || len(ok.Failed()) != 0 {
		t.Errorf("a page whose lines all read yes failed: %q", r.errs)
	}
}
