package provisioner

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestTagKey(t *testing.T) {
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	k := &TagKey{Secret: []byte("0123456789abcdef0123456789abcdef"), Since: since}
	ch := &Chain{ID: "c-20261101-abcdef", Name: "train", Script: "/home/a/job.sbatch", Policy: "lead", TimeLimit: time.Hour, Nodes: 1}
	plain := ChainComment(ch, 2, 0)
	signed := k.Sign("alice", plain)

	// The MAC, computed here independently: HMAC-SHA256(secret, user NUL comment), first 16 bytes in hex.
	h := hmac.New(sha256.New, k.Secret)
	h.Write([]byte("alice\x00" + plain))
	if want := plain + " " + MACPrefix + hex.EncodeToString(h.Sum(nil)[:16]); signed != want {
		t.Fatalf("signed %q\nwant   %q", signed, want)
	}
	// Signing leaves the tag and the specification readable.
	if tag, ok := ParseTag(signed); !ok || tag.Chain != ch.ID || tag.Segment != 2 {
		t.Errorf("ParseTag(signed) = %+v, %v", tag, ok)
	}
	if c, ok := ParseChainSpec(signed); !ok || c.Script != ch.Script {
		t.Errorf("ParseChainSpec(signed) = %+v, %v", c, ok)
	}

	after, before := since.Add(time.Hour), since.Add(-time.Hour)
	otherSpec := ChainComment(&Chain{ID: ch.ID, Script: "/tmp/evil.sh", Policy: "lead", TimeLimit: time.Hour, Nodes: 1}, 2, 0)
	mac := signed[strings.LastIndex(signed, MACPrefix)+len(MACPrefix):]
	for _, c := range []struct {
		name, self, comment string
		submit              time.Time
		want                bool
	}{
		{"signed", "alice", signed, after, true},
		{"signed, other user", "bob", signed, after, false},
		{"another spec under the MAC", "alice", otherSpec + " " + MACPrefix + mac, after, false},
		{"unsigned after the key", "alice", plain, after, false},
		{"unsigned before the key", "alice", plain, before, true},
		{"unsigned, submit unknown", "alice", plain, time.Time{}, false},
		{"signed by a lost key, before this one", "alice", plain + " " + MACPrefix + strings.Repeat("0", 32), before, true},
		{"signed by another key, after this one", "alice", plain + " " + MACPrefix + strings.Repeat("0", 32), after, false},
		{"truncated MAC", "alice", signed[:len(signed)-2], after, false},
	} {
		if got := k.Verified(c.self, &Job{Comment: c.comment, Submit: c.submit}); got != c.want {
			t.Errorf("%s: Verified = %v, want %v", c.name, got, c.want)
		}
	}
	var none *TagKey
	if none.Sign("alice", plain) != plain || !none.Verified("alice", &Job{Comment: plain, Submit: after}) {
		t.Error("a nil key must sign nothing and trust everything")
	}
}
