package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Errors of Location, for callers that map them (the CLI: exit 2 and 4).
// The errors keep their own messages and match these with errors.Is.
var (
	ErrBadDir = errors.New("bad state directory")       // --state cannot be made absolute
	ErrNoDir  = errors.New("no usable state directory") // none by default, or it cannot be created
)

type dirError struct {
	kind error
	err  error
}

func (e *dirError) Error() string        { return e.err.Error() }
func (e *dirError) Unwrap() error        { return e.err }
func (e *dirError) Is(target error) bool { return target == e.kind }

// Location is where the state lives and how long its users wait for it:
// the state flags of the chain commands bind straight into it.
type Location struct {
	Dir         string        // the state directory ("": DefaultDir)
	LockWait    time.Duration // how long commands other than the daemon wait for the daemon lock
	BusyTimeout time.Duration // SQLite busy timeout
}

// Resolve is the absolute state directory.
func (l *Location) Resolve() (string, error) {
	if l.Dir != "" {
		abs, err := filepath.Abs(l.Dir)
		if err != nil {
			return "", &dirError{ErrBadDir, fmt.Errorf("--state %s: %w", l.Dir, err)}
		}
		return abs, nil
	}
	d, err := DefaultDir()
	if err != nil {
		return "", &dirError{ErrNoDir, err}
	}
	return d, nil
}

// Open opens the state database of the directory.
func (l *Location) Open(ctx context.Context) (*Store, error) {
	dir, err := l.Resolve()
	if err != nil {
		return nil, err
	}
	return Open(ctx, dir, Options{BusyTimeout: l.BusyTimeout})
}

// Lock takes the daemon lock beside the database (LockName), waiting up to
// wait (0: failing at once with ErrHeld).
func (l *Location) Lock(ctx context.Context, wait time.Duration) (*Lock, error) {
	dir, err := l.Resolve()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &dirError{ErrNoDir, fmt.Errorf("state directory %s: %w", dir, err)}
	}
	path := filepath.Join(dir, LockName)
	if wait <= 0 {
		return TryLock(path)
	}
	lk, err := WaitLock(ctx, path, wait)
	if errors.Is(err, ErrHeld) {
		return nil, fmt.Errorf("%w: a mirage daemon cycle has kept it for %s; try again (or raise --lock-wait)", err, wait)
	}
	return lk, err
}

// OpenLocked opens the state database and takes the daemon lock (Open, then
// Lock with wait): for the commands that change chains, so that no daemon
// cycle decides on a chain halfway changed. release unlocks and closes.
func (l *Location) OpenLocked(ctx context.Context, wait time.Duration) (st *Store, release func(), err error) {
	if st, err = l.Open(ctx); err != nil {
		return nil, nil, err
	}
	lk, err := l.Lock(ctx, wait)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, func() { lk.Unlock(); st.Close() }, nil
}
