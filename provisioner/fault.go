package provisioner

import (
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// CrashExitCode is the exit code of a FaultHook crash.
const CrashExitCode = 99

// FaultHook is the test-only fault injection of Engine.Fault, from the
// values of MIRAGE_TEST_CRASH_AT=POINT[:N] and MIRAGE_TEST_PAUSE_AT=POINT:DURATION
// (the command layer reads them): exit(CrashExitCode), as a crash would,
// the Nth time (default first) the engine reaches POINT (the Fault* names,
// or "after-lock"), and sleep DURATION at the pause point. Nil when both
// are empty.
func FaultHook(crash, pause string, exit func(code int)) func(point string) {
	if crash == "" && pause == "" {
		return nil
	}
	crashPoint, nth := crash, 1
	if p, n, ok := strings.Cut(crash, ":"); ok {
		crashPoint = p
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			nth = v
		}
	}
	pausePoint, pauseFor := "", time.Duration(0)
	if p, d, ok := strings.Cut(pause, ":"); ok {
		if v, err := time.ParseDuration(d); err == nil {
			pausePoint, pauseFor = p, v
		}
	}
	seen := 0
	return func(point string) {
		if point == pausePoint {
			time.Sleep(pauseFor)
		}
		if point == crashPoint {
			seen++
			if seen == nth {
				slog.Warn("test fault injection: crashing", "point", point)
				exit(CrashExitCode)
			}
		}
	}
}
