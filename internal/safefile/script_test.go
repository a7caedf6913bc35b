package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// hiScript and its hash, worked out with sha256sum:
// printf '#!/bin/bash\necho hi\n' | sha256sum
const (
	hiScript = "#!/bin/bash\necho hi\n"
	hiHash   = "sha256:e8fc5c680bb3d5d8960346207d709feee1d93251aff7795f27c18a40373d7f18"
)

// privateDir is a fresh directory only the user may write.
func privateDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "own")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func writeScript(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(hiScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func TestReadScriptAccepts(t *testing.T) {
	d := privateDir(t)
	p := filepath.Join(d, "train.sbatch")
	writeScript(t, p, 0o755)
	link := filepath.Join(d, "current.sbatch")
	if err := os.Symlink("train.sbatch", link); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(d, "tmp") // like /tmp, but the user's own
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	inSticky := filepath.Join(sticky, "x.sbatch")
	writeScript(t, inSticky, 0o644)
	group := filepath.Join(d, "project") // a group's project directory
	if err := os.Mkdir(group, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(group, 0o2775); err != nil {
		t.Fatal(err)
	}
	inGroup := filepath.Join(group, "y.sbatch")
	writeScript(t, inGroup, 0o644)
	for _, path := range []string{p, link, inSticky, inGroup} {
		abs, content, err := ReadScript(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if abs != path || string(content) != hiScript || Hash(content) != hiHash {
			t.Errorf("%s: read as %s, %q (%s)", path, abs, content, Hash(content))
		}
	}
}

func TestReadScriptRefuses(t *testing.T) {
	d := privateDir(t)
	writable := filepath.Join(d, "open.sbatch")
	writeScript(t, writable, 0o777)
	shared := filepath.Join(d, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil { // every user may write, no sticky bit
		t.Fatal(err)
	}
	inShared := filepath.Join(shared, "x.sbatch")
	writeScript(t, inShared, 0o644)
	big := filepath.Join(d, "big.sbatch")
	if err := os.WriteFile(big, make([]byte, MaxScript+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		unsafe     bool
	}{
		{writable, "chmod go-w", true},
		{inShared, "every user may write (mode 0777, no sticky bit)", true},
		{big, "larger than 4194304 bytes", false},
		{filepath.Join(d, "missing.sbatch"), "no such file", false},
		{d, "not a regular file", false},
	} {
		_, _, err := ReadScript(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNotOwned) != tc.unsafe {
			t.Errorf("%s: %v; want an error saying %q (unsafe: %v)", tc.path, err, tc.want, tc.unsafe)
		}
	}
}

// Another user's file, or a sticky directory another user owns: needs
// root to make (chown).
func TestReadScriptRefusesOtherUsers(t *testing.T) {
	testenv.NeedRoot.Require(t, os.Geteuid() == 0) // to give files to another uid
	const nobody = 65534
	d := privateDir(t)
	theirs := filepath.Join(d, "theirs.sbatch")
	writeScript(t, theirs, 0o755)
	if err := os.Chown(theirs, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(d, "their-tmp")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sticky, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	inSticky := filepath.Join(sticky, "x.sbatch")
	writeScript(t, inSticky, 0o644)
	for path, want := range map[string]string{theirs: "is owned by uid 65534, not by you", inSticky: "uid 65534 owns"} {
		if _, _, err := ReadScript(path); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want ErrNotOwned saying %q", path, err, want)
		}
	}
}

func TestFreezeAndCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scripts")
	path, hash, err := Freeze(dir, []byte(hiScript))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "sha256-"+strings.TrimPrefix(hiHash, HashPrefix))
	if path != want || hash != hiHash {
		t.Fatalf("Freeze: %s, %s; want %s, %s", path, hash, want, hiHash)
	}
	for p, mode := range map[string]fs.FileMode{dir: 0o700 | fs.ModeDir, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != mode {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode(), err, mode)
		}
	}
	if got, err := CheckFrozen(dir, path); err != nil || got != hiHash {
		t.Errorf("CheckFrozen: %s, %v", got, err)
	}
	// Damaged: refused by CheckFrozen, written again by Freeze.
	if err := os.WriteFile(path, []byte("#!/bin/bash\necho other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckFrozen(dir, path); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "no longer has the contents") {
		t.Errorf("CheckFrozen of a changed copy: %v", err)
	}
	if p2, _, err := Freeze(dir, []byte(hiScript)); err != nil || p2 != path {
		t.Fatalf("Freeze again: %s, %v", p2, err)
	}
	if _, err := CheckFrozen(dir, path); err != nil {
		t.Errorf("after Freeze again: %v", err)
	}
	// Not a copy: outside dir, a name that is no hash, a link.
	outside := filepath.Join(t.TempDir(), filepath.Base(path))
	writeScript(t, outside, 0o600)
	link := filepath.Join(dir, "sha256-"+strings.Repeat("0", 64))
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{outside, filepath.Join(dir, "train.sbatch"), link, filepath.Join(dir, "..", "scripts", filepath.Base(path), "x")} {
		if _, err := CheckFrozen(dir, p); !errors.Is(err, ErrNotOwned) {
			t.Errorf("CheckFrozen(%s): %v, want ErrNotOwned", p, err)
		}
	}
	// A copies directory others may write is refused.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Freeze(dir, []byte(hiScript)); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Freeze into a 0777 directory: %v", err)
	}
}

func TestPruneFrozen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scripts")
	keep, kh, err := Freeze(dir, []byte(hiScript))
	if err != nil {
		t.Fatal(err)
	}
	gone, _, err := Freeze(dir, []byte("#!/bin/bash\necho bye\n"))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes.txt")
	writeScript(t, other, 0o600)
	n, err := PruneFrozen(dir, map[string]bool{kh: true})
	if err != nil || n != 1 {
		t.Fatalf("PruneFrozen: %d, %v; want 1 removed", n, err)
	}
	for p, want := range map[string]bool{keep: true, gone: false, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
	if n, err := PruneFrozen(filepath.Join(dir, "none"), nil); n != 0 || err != nil {
		t.Errorf("PruneFrozen of a missing directory: %d, %v", n, err)
	}
}
