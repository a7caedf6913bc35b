package provisioner

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// MACPrefix starts the last token of a signed job comment: a keyed MAC of
// the user and of everything before it (the tag and the specification).
const MACPrefix = "mirage-mac="

// TagKey authenticates the comments mirage writes on its jobs. Anyone who
// can submit a job as the user (or a program of theirs gone wrong) can copy
// a tag and a specification into a job comment; only the holder of the
// user's secret can sign one. The secret is kept 0600 beside the state
// database, in its own file, so that a chain rebuilt after the database is
// lost still verifies.
//
// A job submitted before Since cannot carry a MAC the key checks (it is
// older than the key: mirage was upgraded, or the key was lost and a new
// one made); such a job is judged by its owner alone, so losing the key
// loses no chain. After Since, a tagged job without a valid MAC is not
// trusted.
type TagKey struct {
	Secret []byte    // 32 random bytes
	Since  time.Time // when the key was made, in whole seconds
	// Keeper identifies the state database the key belongs to (KeeperID
	// of its secret and directory): what Chain.Keeper records and every
	// job comment carries. "" turns the keeper checks off.
	Keeper string
}

// KeeperLen is the length of a keeper identity, in hex digits.
const KeeperLen = 16

// KeeperID is the identity of the state database in directory dir (its
// absolute path, links resolved) whose key is secret: a keyed hash of
// the directory, so that a second --state directory is another keeper
// even with a copy of the key, while the same directory, its database lost
// and rebuilt beside the same key, stays the same keeper.
func KeeperID(secret []byte, dir string) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("mirage-keeper\x00"))
	h.Write([]byte(dir))
	return hex.EncodeToString(h.Sum(nil))[:KeeperLen]
}

// macLen is the MAC's length in bytes (128 bits, 32 hex digits).
const macLen = 16

// mac is the hex MAC of comment for user self.
func (k *TagKey) mac(self, comment string) string {
	h := hmac.New(sha256.New, k.Secret)
	h.Write([]byte(self))
	h.Write([]byte{0})
	h.Write([]byte(comment))
	return hex.EncodeToString(h.Sum(nil)[:macLen])
}

// Sign appends the MAC of comment for user self; a nil key returns comment
// unchanged.
func (k *TagKey) Sign(self, comment string) string {
	if k == nil {
		return comment
	}
	return comment + " " + MACPrefix + k.mac(self, comment)
}

// Verified says whether a tagged job's comment is trusted as the user
// self's: always with a nil key; with a key, when the job was submitted
// before the key was made, or in its second (Slurm's times are whole
// seconds): its MAC, if any, is another key's, so it is judged by its owner
// alone; else when its MAC verifies. The submission time is Slurm's,
// which no comment can change.
func (k *TagKey) Verified(self string, j *Job) bool {
	if k == nil || !j.Submit.IsZero() && !j.Submit.After(k.Since) {
		return true
	}
	i := strings.LastIndex(j.Comment, " "+MACPrefix)
	if i < 0 {
		return false
	}
	got := j.Comment[i+1+len(MACPrefix):]
	if e := strings.IndexAny(got, " ,;\t\n"); e >= 0 {
		got = got[:e]
	}
	return hmac.Equal([]byte(got), []byte(k.mac(self, j.Comment[:i])))
}
