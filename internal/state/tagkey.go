package state

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// KeyName is the file of the secret that signs job comments
// (provisioner.TagKey), beside the database. Back it up with the database:
// it is what lets mirage recover trust the jobs' comments after the
// database is lost.
const KeyName = "tag.key"

// keyHeader is the first line of the key file.
const keyHeader = "mirage tag key v1"

// TagKey returns the key that signs and verifies the comments of the user's
// jobs, from KeyName in the state directory, making one when there is none
// (made is then true: jobs submitted before now are judged by their owner
// alone, see provisioner.TagKey). A key file another user owns, that others
// may write or that is a link is refused (ErrUnsafe); one that does not
// read is ErrCorrupt, left untouched. The key's Keeper is the state
// directory's identity (provisioner.KeeperID of the secret and the
// directory's path, links resolved).
func (l *Location) TagKey(now time.Time) (key *provisioner.TagKey, made bool, err error) {
	key, made, err = l.tagKey(now)
	if err != nil {
		return nil, false, err
	}
	if err := l.setKeeper(key); err != nil {
		return nil, false, err
	}
	return key, made, nil
}

// setKeeper sets key.Keeper: provisioner.KeeperID of its secret and the
// state directory's path, links resolved.
func (l *Location) setKeeper(key *provisioner.TagKey) error {
	dir, err := l.Resolve()
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	key.Keeper = provisioner.KeeperID(key.Secret, dir)
	return nil
}

// tagKey reads or makes the key (TagKey), without its Keeper.
func (l *Location) tagKey(now time.Time) (key *provisioner.TagKey, made bool, err error) {
	dir, err := l.Resolve()
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, &dirError{ErrNoDir, fmt.Errorf("state directory %s: %w", dir, err)}
	}
	if err := checkDir(dir); err != nil {
		return nil, false, err
	}
	path := filepath.Join(dir, KeyName)
	if err := checkKeyFile(path); err != nil {
		return nil, false, err
	}
	key, err = readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key = &provisioner.TagKey{Secret: make([]byte, 32), Since: now.UTC().Truncate(time.Second)}
	if _, err := rand.Read(key.Secret); err != nil {
		return nil, false, fmt.Errorf("tag key: %w", err)
	}
	// Written whole to a private temporary file, then linked into place: a
	// concurrent mirage sees no key or a complete one, never a part.
	tmp, err := os.CreateTemp(dir, KeyName+".*")
	if err != nil {
		return nil, false, fmt.Errorf("tag key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = fmt.Fprintf(tmp, "%s\n%s\n%s\n", keyHeader, key.Since.Format(time.RFC3339), hex.EncodeToString(key.Secret))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
	}
	if errors.Is(err, fs.ErrExist) { // another mirage made it first: use that one
		key, err = readKey(path)
		return key, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("tag key %s: %w", path, err)
	}
	return key, true, nil
}

// ExistingTagKey returns the key of KeyName in the state directory, as
// TagKey checks and reads it (with its Keeper), without making one: nil when there is none
// (no file, or no directory). For what changes nothing (mirage recover
// --dry-run): a key made now would trust every job submitted before it on
// its owner alone, as no key does.
func (l *Location) ExistingTagKey() (*provisioner.TagKey, error) {
	dir, err := l.Resolve()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := checkDir(dir); err != nil { // one others may write is refused, key or not
		return nil, err
	}
	path := filepath.Join(dir, KeyName)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := checkKeyFile(path); err != nil {
		return nil, err
	}
	key, err := readKey(path)
	if err != nil {
		return nil, err
	}
	return key, l.setKeeper(key)
}

// checkKeyFile is checkFile, and also refuses a key others may read: the
// secret is what signs the user's jobs.
func checkKeyFile(path string) error {
	if err := checkFile(path); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return unsafeError(path, fmt.Sprintf("may be read by group or others (mode %04o)", fi.Mode().Perm()), "`chmod 600 "+path+"`")
	}
	return nil
}

// readKey reads a key file.
func readKey(path string) (*provisioner.TagKey, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(lines) < 4 {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	bad := func(why string) error {
		return fmt.Errorf("tag key %s: %s: %w (left untouched; restore it from a backup, or move it away: a new key is made and jobs submitted before it are judged by their owner only)", path, why, ErrCorrupt)
	}
	if len(lines) != 3 || lines[0] != keyHeader {
		return nil, bad("not a mirage tag key")
	}
	since, err := time.Parse(time.RFC3339, lines[1])
	if err != nil {
		return nil, bad("bad time")
	}
	secret, err := hex.DecodeString(lines[2])
	if err != nil || len(secret) != 32 {
		return nil, bad("bad secret")
	}
	return &provisioner.TagKey{Secret: secret, Since: since}, nil
}
