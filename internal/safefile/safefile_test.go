package safefile

import (
	"errors"
	"io"
	"io/fs"
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

// TestReadPrivate: a private file is read up to its limit; a larger one,
// a link (to /dev/zero: the planted meta.json of #50, which read 1.2 GB
// before) and a device are refused before anything is read.
func TestReadPrivate(t *testing.T) {
	dir := t.TempDir()
	ten := filepath.Join(dir, "ten")
	if err := os.WriteFile(ten, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadPrivate(ten, 10, "fix"); err != nil || string(b) != "0123456789" {
		t.Errorf("10-byte file, limit 10: %q, %v", b, err)
	}
	if _, err := ReadPrivate(ten, 9, "fix"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "has 10 bytes, more than the 9") {
		t.Errorf("10-byte file, limit 9: %v, want ErrTooLarge", err)
	}
	zero := filepath.Join(dir, "meta.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{zero: "is a symbolic link; retrain it", "/dev/zero": "is not a regular file; retrain it"} {
		if _, err := ReadPrivate(path, 1<<20, "retrain it"); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadPrivate(%s) = %v, want ErrNotOwned %q", path, err, want)
		}
	}
	// What OpenPrivate returns stops at the limit even if the file grew
	// after the check.
	r, err := OpenPrivate(ten, 10, "fix")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.WriteFile(ten, []byte("0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r); len(b) != 10 {
		t.Errorf("read %d bytes of a file grown to 16 after opening with limit 10, want 10", len(b))
	}
}

// TestCheckDir: a private directory (or a link to one) passes; one that
// group or others may write, one below a directory every user may write
// without the sticky bit, and (as root) one another user owns are refused.
func TestCheckDir(t *testing.T) {
	base := privateDir(t)
	own := filepath.Join(base, "models")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{own, link} {
		if err := CheckDir(d, "models directory", "fix"); err != nil {
			t.Errorf("CheckDir(%s): %v", d, err)
		}
	}
	group := filepath.Join(base, "group")
	open := filepath.Join(base, "open")
	for _, d := range []string{group, open} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(group, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	below := filepath.Join(open, "models")
	if err := os.Mkdir(below, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		group: "may be written by group or others (mode 0775); keep models in a directory of your own",
		below: "is in " + open + ", which every user may write (mode 0777, no sticky bit)",
	}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		if err := os.Mkdir(theirs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases[theirs] = "is owned by uid 65534, not by you"
	}
	for d, want := range cases {
		if err := CheckDir(d, "models directory", "keep models in a directory of your own"); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckDir(%s) = %v, want ErrNotOwned %q", d, err, want)
		}
	}
	if err := CheckDir(filepath.Join(base, "missing"), "models directory", "fix"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}
