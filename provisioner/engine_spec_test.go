package provisioner

import (
	"strings"
	"testing"
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

type countingSource struct{ v uint64 }

func (s *countingSource) Uint64() uint64 { return s.v }

func FuzzParseChainSpec(f *testing.F) {
	c := chain(PolicyLead, 3, 2)
	c.Args = []string{"--mem=4G", "a b,c"}
	f.Add(ChainComment(&c, 1, 0))
	f.Add("mirage:c1/0.0 mirage-spec=eyJ2IjoxfQ")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		ch, ok := ParseChainSpec(s)
		if !ok {
			return
		}
		if strings.ContainsAny(ch.ID, "/ ,;\t\n") || ch.ID == "" {
			return // ParseTag accepts ids MustTag refuses (e.g. containing ',' is cut); not re-encodable
		}
		again, ok := ParseChainSpec(ChainComment(&ch, 0, 0))
		if !ok || again.ID != ch.ID || again.Script != ch.Script || again.Segments != ch.Segments || len(again.Args) != len(ch.Args) {
			t.Fatalf("round trip of %q: %+v -> %+v %v", s, ch, again, ok)
		}
	})
}
