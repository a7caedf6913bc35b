package provisioner

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now is f().
func (f ClockFunc) Now() time.Time { return f() }

// SleepContext waits d, or until ctx ends (then it returns ctx's error).
func SleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RandomSeed is a seed for chain ids from the system's random source (the
// time when there is none).
func RandomSeed() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:])
}

// SegmentEnv is what a chain's segments need wherever the daemon runs (cron
// starts it in the home directory with PATH=/usr/bin:/bin): the current
// directory, and PATH with this program's own directory first and
// MIRAGE_BIN, so that a script's relative paths and its "mirage handoff"
// line work. getenv is the environment.
func SegmentEnv(getenv func(string) string) (dir string, env map[string]string, err error) {
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
	return dir, map[string]string{"PATH": path, "MIRAGE_BIN": exe}, nil
}
