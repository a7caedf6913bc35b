package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The key is made once, 0600, and read back the same; a damaged key file
// is refused and left as it was; one others may write is refused as unsafe.
func TestTagKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l := &Location{Dir: dir}
	t0 := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	k1, made, err := l.TagKey(t0)
	if err != nil || !made || len(k1.Secret) != 32 || !k1.Since.Equal(t0) {
		t.Fatalf("first: %+v made=%v err=%v", k1, made, err)
	}
	path := filepath.Join(dir, KeyName)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi.Mode(), err)
	}
	k2, made, err := l.TagKey(t0.Add(time.Hour))
	if err != nil || made || string(k2.Secret) != string(k1.Secret) || !k2.Since.Equal(t0) {
		t.Fatalf("second: %+v made=%v err=%v, want the first key", k2, made, err)
	}
	if err := os.WriteFile(path, []byte("mirage tag key v1\nsoon\n00\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.TagKey(t0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged key: %v, want ErrCorrupt", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mirage tag key v1\nsoon\n00\n" {
		t.Errorf("damaged key rewritten: %q", b)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.TagKey(t0); !errors.Is(err, ErrUnsafe) {
		t.Errorf("key others may read: %v, want ErrUnsafe", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.TagKey(t0); !errors.Is(err, ErrUnsafe) {
		t.Errorf("key others may write: %v, want ErrUnsafe", err)
	}
}
