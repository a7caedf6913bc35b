package state

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// TestUnlockWithCopiedDescriptor: a child forked while the lock is held
// keeps a copy of the descriptor until its exec. Unlock must free the lock
// even so: a copy made with dup (the same open file description, as after
// fork) must not keep the next TryLock out.
func TestUnlockWithCopiedDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), LockName)
	lk, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrHeld) {
		t.Fatalf("second TryLock while held: %v, want ErrHeld", err)
	}
	copyFD, err := syscall.Dup(int(lk.f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(copyFD)
	if err := lk.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after Unlock, with a copy of the old descriptor open: %v", err)
	}
	if err := again.Unlock(); err != nil {
		t.Fatal(err)
	}
}
