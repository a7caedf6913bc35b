// Package acceptance makes the acceptance lines of a results page
// assertions. Each line states a measured figure against its bound and
// ends in a verdict, "yes" or "**no**" (Verdict). The test that measures
// the figures writes its page first, then calls Check, which fails the
// test once for every line that read "no": the page records what was
// measured either way, and a "no" is never only printed.
//
// A line shown for comparison only (a policy that is not a default) or a
// target the page explains is out of reach says so with Compared's or
// Target's wording and is not asserted.
package acceptance

import "testing"

// Lines collects the lines of one page that read "no".
type Lines struct {
	page   string
	failed []string
}

// New starts the lines of the page named page (its path, for messages).
func New(page string) *Lines { return &Lines{page: page} }

// Verdict returns "yes" when ok, else "**no**", and remembers line (what
// the page says, figure and bound) to fail on.
func (l *Lines) Verdict(ok bool, line string) string {
	if ok {
		return "yes"
	}
	l.failed = append(l.failed, line)
	return "**no**"
}

// Failed returns the lines that read "no", in the order they were written.
func (l *Lines) Failed() []string { return l.failed }

// Check fails t once for every line that read "no". Call it after the page
// is written.
func (l *Lines) Check(t testing.TB) {
	t.Helper()
	for _, line := range l.failed {
		t.Errorf("%s: acceptance line not met: %s", l.page, line)
	}
}

// Compared is the verdict of a line shown for comparison only: "met" or
// "not met", marked as not asserted.
func Compared(ok bool) string {
	if ok {
		return "met (for comparison, not asserted)"
	}
	return "not met (for comparison, not asserted)"
}

// Target is the verdict of a target the page states without asserting it
// (the page says why): "met" or "not met", marked as not asserted.
func Target(ok bool) string {
	if ok {
		return "met (a target, not asserted)"
	}
	return "not met (a target, not asserted)"
}
