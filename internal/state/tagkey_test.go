package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
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

// TestKeeper (#50): a state directory's keeper identity is the same every
// time and through a link to it, and another directory holding a copy of
// its key is another keeper (a second --state must not act on the
// first's chains).
func TestKeeper(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	k1, _, err := (&Location{Dir: dir}).TagKey(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1.Keeper) != provisioner.KeeperLen || k1.Keeper != provisioner.KeeperID(k1.Secret, dir) {
		t.Fatalf("keeper %q, want KeeperID of the secret and %s", k1.Keeper, dir)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, link} {
		if k, _, err := (&Location{Dir: d}).TagKey(now); err != nil || k.Keeper != k1.Keeper {
			t.Errorf("%s: keeper %v, %v; want %s", d, k, err, k1.Keeper)
		}
	}
	other := filepath.Join(base, "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, KeyName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, KeyName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	k2, made, err := (&Location{Dir: other}).TagKey(now)
	if err != nil || made || string(k2.Secret) != string(k1.Secret) || k2.Keeper == k1.Keeper {
		t.Errorf("a copy of the key in %s: %+v (made %v), %v; want the same secret, another keeper", other, k2, made, err)
	}
}
