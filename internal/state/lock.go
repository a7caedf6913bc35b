package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ErrHeld means another mirage process holds the lock.
var ErrHeld = errors.New("another mirage process holds the lock")

// Lock is an exclusive advisory lock (flock) on a file; the kernel releases
// it when the process dies, so a killed daemon never leaves it stale.
type Lock struct {
	f *os.File
}

// TryLock takes the lock on path (created 0600) or fails at once with
// ErrHeld. A lock file that is a symbolic link (never followed), owned by
// another user or writable by group or others is refused with ErrUnsafe:
// whoever can hold it could stop the daemon.
func TryLock(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, unsafeError(path, "is a symbolic link", "remove it (mirage creates its lock file itself) and run again")
	}
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	// Checked on the open descriptor, so the file cannot be swapped in between.
	fi, err := f.Stat()
	if err == nil {
		err = checkPrivate(path, fi, false)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, ErrHeld)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// WaitLock takes the lock, polling until timeout; it then fails with ErrHeld.
func WaitLock(ctx context.Context, path string, timeout time.Duration) (*Lock, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, err := TryLock(path)
		if err == nil || !errors.Is(err, ErrHeld) || !time.Now().Before(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Unlock releases the lock.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	// Unlock first: closing alone releases the flock only once every copy
	// of the descriptor is closed, and a child being forked at that moment
	// (squeue, sbatch) holds a copy until its exec.
	uerr := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return errors.Join(uerr, err)
}
