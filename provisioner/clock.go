package provisioner

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
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
