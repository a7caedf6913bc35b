package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// openErr opens dir and returns the error, closing a store that opened.
func openErr(t *testing.T, dir string) error {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{BusyTimeout: 200 * time.Millisecond})
	if err == nil {
		s.Close()
	}
	return err
}

// wantUnsafe checks err is ErrUnsafe and names the path and a fix.
func wantUnsafe(t *testing.T, err error, path, fix string) {
	t.Helper()
	if !errors.Is(err, ErrUnsafe) {
		t.Fatalf("err = %v, want ErrUnsafe", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fix) {
		t.Errorf("error %q does not name %s and the fix %q", err, path, fix)
	}
}

// Before: a 0777 state directory was used as it was, so any user could
// plant a WAL or lock file in it.
func TestOpenRefusesWorldWritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mirage")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	wantUnsafe(t, openErr(t, dir), dir, "chmod 700")
	if _, err := os.Stat(filepath.Join(dir, DBName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a database was created in the refused directory: %v", err)
	}
}

// Before: a group-writable mirage.db-wal planted beside the database was
// replayed by SQLite into it.
func TestOpenRefusesPlantedWAL(t *testing.T) {
	dir := t.TempDir()
	open(t, dir).Close()
	for _, suffix := range []string{"-wal", "-shm"} {
		p := filepath.Join(dir, DBName+suffix)
		os.Remove(p)
		if err := os.WriteFile(p, []byte("planted"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
		wantUnsafe(t, openErr(t, dir), p, "chmod 600")
		os.Remove(p)
	}
	if err := openErr(t, dir); err != nil {
		t.Fatalf("after removing the planted files: %v", err)
	}
}

// A database only group-readable is still tightened (as before); a
// group-writable one is refused.
func TestOpenRefusesGroupWritableDB(t *testing.T) {
	dir := t.TempDir()
	open(t, dir).Close()
	p := filepath.Join(dir, DBName)
	if err := os.Chmod(p, 0o664); err != nil {
		t.Fatal(err)
	}
	wantUnsafe(t, openErr(t, dir), p, "chmod 600")
}

// Before: TryLock followed a symlink at mirage.lock to wherever it pointed.
func TestTryLockRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, LockName)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	_, err := TryLock(p)
	wantUnsafe(t, err, p, "remove it")
	// Open refuses it too, before SQLite opens anything.
	wantUnsafe(t, openErr(t, dir), p, "remove it")
	// So is a symlinked database.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, DBName)
	if err := os.Symlink(target, db); err != nil {
		t.Fatal(err)
	}
	wantUnsafe(t, openErr(t, dir), db, "remove it")
}

// Files and directories owned by another user are refused (needs root to chown).
func TestRefusesOtherOwner(t *testing.T) {
	testenv.NeedRoot.Require(t, os.Geteuid() == 0) // to give files to another uid
	const nobody = 65534
	t.Run("lock", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, LockName)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		_, err := TryLock(p)
		wantUnsafe(t, err, p, "chown")
		if !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("error %q does not name the owner", err)
		}
	})
	t.Run("dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "mirage")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		wantUnsafe(t, openErr(t, dir), dir, "uid 65534")
	})
	t.Run("db", func(t *testing.T) {
		dir := t.TempDir()
		open(t, dir).Close()
		p := filepath.Join(dir, DBName)
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		wantUnsafe(t, openErr(t, dir), p, "uid 65534")
	})
}
