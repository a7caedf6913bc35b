package main

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What the commands take from the process: the real clock's waiting, a
// seed, the environment a chain's segments need, and the test-only fault
// injection of the engine. The provisioner's core does none of this.

// sleepContext waits d, or until ctx ends (then it returns ctx's error).
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// randomSeed is a seed for chain ids from the system's random source (the
// time when there is none).
func randomSeed() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:])
}

// envState is the environment variable that gives every segment the state
// directory of its chain (recorded by submit in Chain.Env): `mirage done`
// in a job writes its marker there, where the daemon reads it.
const envState = "MIRAGE_STATE"

// segmentEnv is what a chain's segments need wherever the daemon runs (cron
// starts it in the home directory with PATH=/usr/bin:/bin): the current
// directory, PATH with this program's own directory first and MIRAGE_BIN,
// so that a script's relative paths and its "mirage handoff" line work,
// and the state directory stateDir (envState) for its "mirage done" line.
// getenv is the environment.
func segmentEnv(getenv func(string) string, stateDir string) (dir string, env map[string]string, err error) {
	if dir, err = os.Getwd(); err != nil {
		return "", nil, fmt.Errorf("working directory: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("mirage's own path: %w", err)
	}
	path := filepath.Dir(exe)
	if p := getenv("PATH"); p != "" {
		path += string(os.PathListSeparator) + p
	}
	return dir, map[string]string{"PATH": path, "MIRAGE_BIN": exe, envState: stateDir}, nil
}

// crashExitCode is the exit code of a FaultHook crash.
const crashExitCode = 99

// faultHook is the test-only fault injection of Engine.Fault, from the
// values of MIRAGE_TEST_CRASH_AT=POINT[:N] and MIRAGE_TEST_PAUSE_AT=POINT:DURATION
// (the command layer reads them): exit(crashExitCode), as a crash would,
// the Nth time (default first) the engine reaches POINT (the Fault* names,
// or "after-lock"), and sleep DURATION at the pause point. Nil when both
// are empty.
func faultHook(crash, pause string, exit func(code int)) func(point string) {
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
				exit(crashExitCode)
			}
		}
	}
}
