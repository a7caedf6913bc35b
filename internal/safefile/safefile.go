// Package safefile writes files atomically without following links that
// another user may have planted, and opens files for decoding only when
// they are the user's own. Shared directories (/tmp, a group cache) are
// hostile ground on a login node: a fixed "path.tmp" can be a symbolic
// link to a file of the victim's, and a cache written by someone else can
// feed the gob decoder whatever it likes.
package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotOwned is matched by OpenOwned's errors for a file another user
// owns, that group or others may write, or that is not a regular file.
var ErrNotOwned = errors.New("file is not private to its owner")

// WriteFile writes path atomically with permissions perm: write fills a new
// temporary file (os.CreateTemp in path's directory, a fresh random name
// created exclusively, so no planted link is followed), which is then
// renamed over path once its content is synced to disk. write gets a
// buffered writer. On any error the temporary file is removed and path is
// left as it was.
func WriteFile(path string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// OpenOwned opens path for reading without following a symbolic link, and
// only if it is a regular file the current user owns that neither group
// nor others may write (an error wrapping ErrNotOwned names the path, why
// and what to do).
func OpenOwned(path string) (*os.File, error) {
	return openOwned(path, "delete it (it is rebuilt) or keep caches in a directory of your own")
}

// openOwned is OpenOwned whose refusal ends with fix, what to do.
func openOwned(path, fix string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%w: %s is a symbolic link; %s", ErrNotOwned, path, fix)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	why := notOwned(fi)
	if why != "" {
		f.Close()
		return nil, fmt.Errorf("%w: %s %s; %s", ErrNotOwned, path, why, fix)
	}
	return f, nil
}

// ErrTooLarge is matched by the errors of OpenPrivate and ReadPrivate for a
// file larger than their limit.
var ErrTooLarge = errors.New("file larger than its limit")

// limitedFile is an open file read through a limit.
type limitedFile struct {
	io.Reader
	f *os.File
}

func (l *limitedFile) Close() error { return l.f.Close() }

// OpenPrivate opens path for reading as OpenOwned does (a symbolic link, a
// device, a file of another user's or one group or others may write is
// refused, wrapping ErrNotOwned, the error ending with fix), and refuses a
// file larger than limit bytes (wrapping ErrTooLarge). What it returns
// reads at most limit bytes, so a file grown since the check is cut, not
// read without end.
func OpenPrivate(path string, limit int64, fix string) (io.ReadCloser, error) {
	f, err := openOwned(path, fix)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%w: %s has %d bytes, more than the %d this file may have", ErrTooLarge, path, fi.Size(), limit)
	}
	return &limitedFile{Reader: io.LimitReader(f, limit), f: f}, nil
}

// ReadPrivate reads the whole of path, opened by OpenPrivate.
func ReadPrivate(path string, limit int64, fix string) ([]byte, error) {
	r, err := OpenPrivate(path, limit, fix)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// CheckDir refuses the directory dir (links followed) unless the current
// user owns it and neither group nor others may write it, and unless no
// directory above it lets someone else replace it: one every user may
// write without the sticky bit, or with it but owned by another user (see
// ReadScript). what names the directory in the refusal, which wraps
// ErrNotOwned and ends with fix; a missing directory gives the os error.
func CheckDir(dir, what, fix string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if why := notPrivateDir(fi); why != "" {
		return fmt.Errorf("%w: %s %s %s; %s", ErrNotOwned, what, shown(dir, real), why, fix)
	}
	return checkDirs(filepath.Dir(real), what+" "+dir, fix)
}

// notOwned says why fi is not a regular file the current user owns that
// neither group nor others may write ("" when it is).
func notOwned(fi os.FileInfo) string {
	switch st, ok := fi.Sys().(*syscall.Stat_t); {
	case !fi.Mode().IsRegular():
		return "is not a regular file"
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("may be written by group or others (mode %04o)", fi.Mode().Perm())
	}
	return ""
}

// CheckOwned refuses a file (following links) unless it is a regular file
// the current user owns that neither group nor others may write: one whose
// contents nobody else can choose (an error wrapping ErrNotOwned says why).
func CheckOwned(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if why := notOwned(fi); why != "" {
		return fmt.Errorf("%w: %s %s", ErrNotOwned, path, why)
	}
	return nil
}
