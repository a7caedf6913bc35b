package provisioner

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestChainIDAndSpec(t *testing.T) {
	src := &countingSource{v: 0xabcdef12}
	if id := NewChainID(t0, src); id != "c-20261123-cdef12" {
		t.Errorf("id %s", id)
	}
	if _, ok := ParseChainSpec("mirage:c1/0.0"); ok {
		t.Error("spec without the spec token accepted")
	}
	if _, ok := ParseChainSpec("mirage:c1/0.0 mirage-spec=!!!"); ok {
		t.Error("garbage spec accepted")
	}
}

// TestSegmentRequestWorkDirAndEnv: every segment is submitted in the
// chain's recorded directory with its recorded environment; the MIRAGE_*
// variables are mirage's own, whatever was recorded. The directory also
// travels in the comment's spec (for recover); the environment does not.
func TestSegmentRequestWorkDirAndEnv(t *testing.T) {
	c := chain(PolicyLead, 3, 2)
	c.WorkDir = "/scratch/u/run 1"
	c.Env = map[string]string{"PATH": "/opt/m/bin:/usr/bin", "MIRAGE_BIN": "/opt/m/bin/mirage", EnvSegment: "recorded"}
	req := segmentRequest(&c, 2, 0, "41")
	want := map[string]string{"PATH": "/opt/m/bin:/usr/bin", "MIRAGE_BIN": "/opt/m/bin/mirage", EnvChain: c.ID, EnvSegment: "2", EnvPrevJob: "41"}
	if req.WorkDir != "/scratch/u/run 1" || len(req.Env) != len(want) {
		t.Fatalf("request %+v", req)
	}
	for k, v := range want {
		if req.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, req.Env[k], v)
		}
	}
	if c.Env[EnvSegment] != "recorded" {
		t.Error("segmentRequest changed the chain's recorded environment")
	}
	back, ok := ParseChainSpec(req.Comment)
	if !ok || back.WorkDir != c.WorkDir || back.Env != nil {
		t.Errorf("spec round trip: %+v, %v", back, ok)
	}
}

// TestSpecSignalLead: the --signal lead travels in the comment's spec, so
// that a chain rebuilt by mirage recover keeps the rule for an exit after
// its signal point; a negative lead is not a spec.
func TestSpecSignalLead(t *testing.T) {
	c := chain(PolicyLead, 0, 2)
	c.SignalLead = 40 * time.Second
	back, ok := ParseChainSpec(ChainComment(&c, 1, 0))
	if !ok || back.SignalLead != 40*time.Second {
		t.Errorf("spec round trip: %+v, %v; want a signal lead of 40s", back, ok)
	}
	if got := DecodeSpecText(ChainComment(&c, 1, 0)); !strings.HasSuffix(got, ", signal 40s before the limit") {
		t.Errorf("spec text %q does not name the signal lead", got)
	}
	if _, ok := ParseChainSpec("mirage:c1/0.0 mirage-spec=" + base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"sig":-5}`))); ok {
		t.Error("a negative signal lead accepted")
	}
}

type countingSource struct{ v uint64 }

func (s *countingSource) Uint64() uint64 { return s.v }

func FuzzParseChainSpec(f *testing.F) {
	c := chain(PolicyLead, 3, 2)
	c.Args = []string{"--mem=4G", "a b,c"}
	f.Add(ChainComment(&c, 1, 0))
	f.Add("mirage:c1/0.0 mirage-spec=eyJ2IjoxfQ")
	f.Add(v1Comment)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		ch, ok := ParseChainSpec(s)
		if !ok {
			return
		}
		if strings.ContainsAny(ch.ID, "/ ,;\t\n") || ch.ID == "" {
			return // ParseTag accepts ids MustTag refuses (e.g. containing ',' is cut); not re-encodable
		}
		comment := ChainComment(&ch, 0, 0)
		again, ok := ParseChainSpec(comment)
		if !ok || again.ID != ch.ID || again.Script != ch.Script || again.Segments != ch.Segments || again.Args != nil {
			t.Fatalf("round trip of %q: %+v -> %+v %v", s, ch, again, ok)
		}
		if n, carried := SpecOptions(comment); n != len(ch.Args) || carried != (n == 0) {
			t.Fatalf("round trip of %q: %d option words (carried %v), want %d left out", s, n, carried, len(ch.Args))
		}
	})
}

// v1Comment is a comment of the specification's version 1 (before #50),
// which carried the sbatch options: base64url of
// {"v":1,"s":"/home/u/t.sbatch","a":["--mem=4G","--qos=low"],"p":"lead","t":3600,"N":1}.
const v1Comment = "mirage:c-20261123-aaaaaa/1.0 mirage-spec=eyJ2IjoxLCJzIjoiL2hvbWUvdS90LnNiYXRjaCIsImEiOlsiLS1tZW09NEciLCItLXFvcz1sb3ciXSwicCI6ImxlYWQiLCJ0IjozNjAwLCJOIjoxfQ"

// TestCommentCarriesNoOptions (#50): every user can read a job's comment,
// so the specification in it says how many sbatch option words the chain
// has, never which; a version-1 comment still reads with its options.
func TestCommentCarriesNoOptions(t *testing.T) {
	c := chain(PolicyLead, 3, 2)
	c.Args = []string{"--export=ALL,WANDB_API_KEY=0123456789abcdef", "--mail-user=me@example.org", "--mem=4G"}
	comment := ChainComment(&c, 1, 0)
	i := strings.Index(comment, SpecPrefix)
	raw, err := base64.RawURLEncoding.DecodeString(comment[i+len(SpecPrefix):])
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"WANDB_API_KEY", "0123456789abcdef", "me@example.org", "mem=4G"} {
		if strings.Contains(comment, secret) || strings.Contains(string(raw), secret) || strings.Contains(DecodeSpecText(comment), secret) {
			t.Errorf("the comment carries %q: %s (%s)", secret, comment, raw)
		}
	}
	back, ok := ParseChainSpec(comment)
	if n, carried := SpecOptions(comment); !ok || back.Args != nil || n != 3 || carried {
		t.Errorf("read back: %+v %v; %d option words, carried %v; want none read, 3 left out", back, ok, n, carried)
	}
	if !strings.Contains(DecodeSpecText(comment), "3 sbatch option word(s) not in the comment") {
		t.Errorf("DecodeSpecText: %s", DecodeSpecText(comment))
	}
	old, ok := ParseChainSpec(v1Comment)
	if n, carried := SpecOptions(v1Comment); !ok || old.Script != "/home/u/t.sbatch" || len(old.Args) != 2 || old.Args[1] != "--qos=low" || n != 2 || !carried {
		t.Errorf("version 1: %+v %v; %d words, carried %v", old, ok, n, carried)
	}
	// Slurm refuses comments over 1024 bytes: the longest this chain's
	// segments carry is its tag at segment 999999.99, the spec with the
	// keeper the database writes at its first cycle (16 hex digits), a
	// MAC, and the word mirage cancel may add to its last job.
	c.Name = strings.Repeat("n", 900)
	kept := c
	kept.Keeper = "0123456789abcdef"
	if n := CommentLimit(&c); n <= MaxComment || n != len(ChainComment(&kept, 999999, 99))+len(" mirage-mac=")+32+len(" mirage-end=cancelled") {
		t.Errorf("CommentLimit of a 900-byte name: %d", n)
	}
}

// MarkedCancelled finds the word mirage cancel adds, as a word of its own
// only.
func TestMarkedCancelled(t *testing.T) {
	for comment, want := range map[string]bool{
		"mirage:c-1/0.0 mirage-spec=e30 mirage-mac=00ff mirage-end=cancelled": true,
		"mirage:c-1/0.0 mirage-end=cancelled mirage-mac=00ff":                 true,
		"mirage:c-1/0.0,mirage-end=cancelled":                                 true,
		"mirage:c-1/0.0 mirage-spec=e30 mirage-mac=00ff":                      false,
		"mirage:c-1/0.0 xmirage-end=cancelled":                                false,
		"mirage:c-1/0.0 mirage-end=cancelledx":                                false,
		"":                                                                    false,
	} {
		if got := MarkedCancelled(comment); got != want {
			t.Errorf("MarkedCancelled(%q) = %v, want %v", comment, got, want)
		}
	}
}
