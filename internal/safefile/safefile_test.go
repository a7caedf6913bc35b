package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFileDoesNotFollowPlantedLink: a "path.tmp" link planted to a
// victim file (the old fixed temporary name) is neither followed nor
// needed; the victim keeps its contents and path gets the new ones.
func TestWriteFileDoesNotFollowPlantedLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out.csv")
	if err := os.Symlink(victim, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, 0o600, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim overwritten: %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("path holds %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	// A failed write leaves path as it was and no temporary file behind.
	if err := WriteFile(path, 0o600, func(w io.Writer) error { return errors.New("boom") }); err == nil {
		t.Fatal("the write's error was lost")
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("path after a failed write: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 { // victim, out.csv, the planted link
		t.Errorf("left behind: %v", ents)
	}
}

func TestOpenOwned(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	if err := os.WriteFile(mine, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenOwned(mine); err != nil {
		t.Errorf("own private file: %v", err)
	} else {
		f.Close()
	}
	shared := filepath.Join(dir, "shared")
	if err := os.WriteFile(shared, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o666); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{shared: "may be written by group or others (mode 0666)", link: "is a symbolic link", dir: "is not a regular file"} {
		f, err := OpenOwned(path)
		if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenOwned(%s) = %v, want ErrNotOwned %q", path, err, want)
		}
		if f != nil {
			f.Close()
		}
	}
	// A file another user owns (root can give one away).
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenOwned(other); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("another user's file: %v", err)
		}
	}
}
