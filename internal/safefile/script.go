package safefile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A job script is the one file mirage hands to another program to run as
// the user: sbatch reads it and Slurm runs it. So the chain commands read
// it once, at submit, only when nobody else can have chosen its contents
// (ReadScript), and keep a private copy named by its content hash in the
// state directory (Freeze) that every segment is submitted from
// (CheckFrozen, before each sbatch). What happens to the original
// afterwards (an edit, another user's file in its place, a cleaner
// deleting it from /tmp) changes nothing the chain runs.

// MaxScript caps a job script's size: Slurm's own default limit
// (SchedulerParameters max_script_size) is 4 MB.
const MaxScript = 4 << 20

// HashPrefix starts a script's content hash as mirage records and shows it.
const HashPrefix = "sha256:"

// Hash is the content hash of a script: "sha256:" and 64 hex digits.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return HashPrefix + hex.EncodeToString(sum[:])
}

// ReadScript reads the job script at path for submission and returns its
// absolute path and contents. Symbolic links are followed; the file
// reached must be a regular file of at most MaxScript bytes (else a plain
// error) that the current user owns and neither group nor others may write, and no
// directory above it may be writable by others without the sticky bit, or
// sticky and writable by others but owned by another user (either lets
// someone else put a file of their own in its place). A refusal wraps
// ErrNotOwned and says what to do; a missing or unreadable file gives the
// os error, with the path.
func ReadScript(path string) (abs string, content []byte, err error) {
	if abs, err = filepath.Abs(path); err != nil {
		return "", nil, fmt.Errorf("script %s: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, fmt.Errorf("script %s: %w", path, err)
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) { // replaced by a link since EvalSymlinks
			return "", nil, fmt.Errorf("%w: script %s changed while it was read; check it and submit again", ErrNotOwned, path)
		}
		return "", nil, fmt.Errorf("script %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("script %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("script %s is not a regular file: give the batch script itself", shown(path, real))
	}
	if why := scriptNotOwned(fi); why != "" {
		return "", nil, fmt.Errorf("%w: script %s %s", ErrNotOwned, shown(path, real), why)
	}
	if err := checkDirs(filepath.Dir(real), "script "+path, "keep job scripts in a directory of your own"); err != nil {
		return "", nil, err
	}
	if content, err = readMax(f, MaxScript); err != nil {
		return "", nil, fmt.Errorf("script %s: %w", path, err)
	}
	return abs, content, nil
}

// shown names the script as given, and the file it leads to when a link
// was followed.
func shown(path, real string) string {
	if abs, _ := filepath.Abs(path); abs == real {
		return path
	}
	return path + " (" + real + ")"
}

// scriptNotOwned says why fi, a regular file, cannot be the user's own job
// script ("" when it can), with the fix.
func scriptNotOwned(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("is owned by uid %d, not by you (uid %d): whoever owns it chooses what your jobs run; "+
			"copy it to a file of your own (cp, then check it) and submit that", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("may be written by group or others (mode %04o): anyone who may write it chooses what your jobs run; "+
			"check its contents, then chmod go-w it and submit again", fi.Mode().Perm())
	}
	return ""
}

// checkDirs refuses a file (what names it, e.g. "script x.sbatch") under
// a directory dir, or one above, in which someone else may replace it:
// writable by others without the sticky bit, or with it but owned by
// another user (the owner of a sticky directory may rename anything in
// it). The refusal wraps ErrNotOwned and ends with fix. Group-writable
// directories are the group's choice and are accepted, as are directories
// of other users that others may not write (for a script: the copy made
// at submit is what runs, whatever happens later).
func checkDirs(dir, what, fix string) error {
	me := uint32(os.Geteuid())
	for {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("%s: directory %s: %w", what, dir, err)
		}
		perm := fi.Mode()
		owner := me
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = st.Uid
		}
		switch {
		case perm&0o002 != 0 && perm&fs.ModeSticky == 0:
			return fmt.Errorf("%w: %s is in %s, which every user may write (mode %04o, no sticky bit): anyone could put a file of theirs in its place; "+
				"%s", ErrNotOwned, what, dir, perm.Perm(), fix)
		case perm&0o002 != 0 && owner != 0 && owner != me:
			return fmt.Errorf("%w: %s is in %s, which every user may write and uid %d owns (the owner of a sticky directory may replace anything in it); "+
				"%s", ErrNotOwned, what, dir, owner, fix)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// readMax reads r to its end, refusing more than limit bytes.
func readMax(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes (Slurm's default max_script_size): keep data out of the job script", limit)
	}
	return b, nil
}

// frozenName is the file name of the copy of content: "sha256-HEX".
func frozenName(hash string) string { return "sha256-" + strings.TrimPrefix(hash, HashPrefix) }

// Freeze keeps content (a script ReadScript read) in dir, the private
// directory of script copies (created 0700 when absent; refused, wrapping
// ErrNotOwned, unless the user owns it and nobody else may write it),
// under a name made of its hash, 0600, and returns the copy's path and the
// hash. An intact copy of the same content is reused; a damaged one is
// written again (atomically).
func Freeze(dir string, content []byte) (path, hash string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("script copies: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", "", fmt.Errorf("script copies: %w", err)
	}
	if why := notPrivateDir(fi); why != "" {
		return "", "", fmt.Errorf("%w: script copies directory %s %s; it is mirage's own: move it away and run again", ErrNotOwned, dir, why)
	}
	hash = Hash(content)
	path = filepath.Join(dir, frozenName(hash))
	if got, err := CheckFrozen(dir, path); err == nil && got == hash {
		return path, hash, nil
	}
	err = WriteFile(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("script copy %s: %w", path, err)
	}
	return path, hash, nil
}

// notPrivateDir says why fi is not a directory of the user's that nobody
// else may write ("" when it is).
func notPrivateDir(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "is not a directory"
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("may be written by group or others (mode %04o)", fi.Mode().Perm())
	}
	return ""
}

// CheckFrozen checks that path is a copy Freeze made in dir: a file
// directly in dir named by a hash, not a link, that the user owns and
// nobody else may write, whose contents still have that hash. It returns
// the hash; a refusal wraps ErrNotOwned (or is the os error of a missing
// file) and names the path.
func CheckFrozen(dir, path string) (string, error) {
	base := filepath.Base(path)
	hex, ok := strings.CutPrefix(base, "sha256-")
	if filepath.Clean(path) != filepath.Join(dir, base) || !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%w: %s is not one of mirage's script copies (in %s, named by their hash)", ErrNotOwned, path, dir)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("%w: script copy %s is a symbolic link", ErrNotOwned, path)
	}
	if err != nil {
		return "", fmt.Errorf("script copy: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("script copy: %w", err)
	}
	if why := notOwned(fi); why != "" {
		return "", fmt.Errorf("%w: script copy %s %s", ErrNotOwned, path, why)
	}
	content, err := readMax(f, MaxScript)
	if err != nil {
		return "", fmt.Errorf("script copy %s: %w", path, err)
	}
	hash := Hash(content)
	if hash != HashPrefix+hex {
		return "", fmt.Errorf("%w: script copy %s no longer has the contents it was made with (now %s)", ErrNotOwned, path, hash)
	}
	return hash, nil
}

// PruneFrozen removes the copies in dir whose hash keep does not hold
// (other files are left alone) and returns how many it removed. A missing
// dir has nothing to prune.
func PruneFrozen(dir string, keep map[string]bool) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("script copies: %w", err)
	}
	n := 0
	for _, e := range ents {
		hex, ok := strings.CutPrefix(e.Name(), "sha256-")
		if !ok || !e.Type().IsRegular() || keep[HashPrefix+hex] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("script copies: %w", err)
		}
		n++
	}
	return n, nil
}
