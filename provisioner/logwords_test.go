package provisioner

import (
	"testing"
	"time"
)

// TestGapText (#51): the gap event says an interruption, an overlap or
// neither in words; a gap that rounds to 0 s (400 ms: the log shows whole
// seconds) is no interruption, where it used to read "+0s … (interruption)".
func TestGapText(t *testing.T) {
	for _, c := range []struct {
		gap  time.Duration
		want string
	}{
		{400 * time.Millisecond, "segment 1 started as segment 0 ended (no interruption, no overlap)"},
		{-499 * time.Millisecond, "segment 1 started as segment 0 ended (no interruption, no overlap)"},
		{90 * time.Second, "segment 1 started 1m30s after segment 0 ended (an interruption of 1m30s)"},
		{-time.Minute, "segment 1 started 1m0s before segment 0 ended (an overlap of 1m0s)"},
	} {
		if got := gapText(1, 0, c.gap); got != c.want {
			t.Errorf("gap %v: %q, want %q", c.gap, got, c.want)
		}
	}
}

// TestSameReason (#51): waits fold into one log entry when their reasons
// differ only in figures (durations, times, job ids), not when the reason
// changes.
func TestSameReason(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"expected wait 3m20s: wait", "expected wait 45s: wait", true},
		{"predecessor job 46 still pending: wait", "predecessor job 47 still pending: wait", true},
		{"begin at 2026-12-07T03:00:00Z", "begin at 2026-12-07T03:10:00Z", true},
		{"predecessor job 46 still pending: wait", "kept the pin: node2 idle", false},
		{"predecessor still running: wait for it to end", "predecessor job 46 still pending: wait", false},
	} {
		if got := SameReason(c.a, c.b); got != c.same {
			t.Errorf("SameReason(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
