package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrUnsafe means a state directory or file could be changed by someone
// other than the user running mirage: another user owns it, group or others
// may write it, or it is a symbolic link. mirage refuses to use it, because a
// planted database, WAL or lock file would steer what the daemon submits or
// stop it. The CLI maps it to its own exit code.
var ErrUnsafe = errors.New("state file is not private to its owner")

// unsafeError names the path, why it is refused and how to fix it; it wraps ErrUnsafe.
func unsafeError(path, why, fix string) error {
	return fmt.Errorf("%w: %s %s; %s", ErrUnsafe, path, why, fix)
}

// checkPrivate refuses fi (describing path; isDir tells what it should be)
// unless the current user owns it and neither group nor others may write
// it. Symbolic links are refused: the caller passes Lstat's answer for files.
func checkPrivate(path string, fi fs.FileInfo, isDir bool) error {
	me := os.Geteuid()
	if fi.Mode()&fs.ModeSymlink != 0 {
		return unsafeError(path, "is a symbolic link", "remove it (mirage creates its files itself) and run again")
	}
	if isDir && !fi.IsDir() {
		return unsafeError(path, "is not a directory", "move it away or choose another --state directory")
	}
	if !isDir && !fi.Mode().IsRegular() {
		return unsafeError(path, "is not a regular file", "move it away and run again")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != me {
		return unsafeError(path, fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, me),
			"check who planted it; if it is yours, `chown` it to yourself, otherwise move the state elsewhere with --state")
	}
	if fi.Mode().Perm()&0o022 != 0 {
		want := "600"
		if isDir {
			want = "700"
		}
		return unsafeError(path, fmt.Sprintf("is writable by group or others (mode %04o)", fi.Mode().Perm()),
			fmt.Sprintf("check its contents, then `chmod %s %s`", want, path))
	}
	return nil
}

// checkDir refuses a state directory that is not private (see checkPrivate).
// The directory itself may be reached through a symbolic link (the user's
// choice of --state); what it points to is checked.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	return checkPrivate(dir, fi, true)
}

// CheckPrivateFile refuses a file of the state directory that another
// user owns or could have written (a symbolic link, group or other write),
// as the database's files are refused (ErrUnsafe); an absent file is fine.
func CheckPrivateFile(path string) error { return checkFile(path) }

// checkFile refuses an existing file that is not private; an absent file is fine.
func checkFile(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state file %s: %w", path, err)
	}
	return checkPrivate(path, fi, false)
}
