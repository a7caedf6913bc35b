package provisioner

import (
	"testing"
	"time"
)

func TestParseTag(t *testing.T) {
	cases := []struct {
		in   string
		want Tag
		ok   bool
	}{
		{"mirage:c-20261123-ab12cd/3.0", Tag{"c-20261123-ab12cd", 3, 0}, true},
		{"user note, mirage:c1/0.2 more", Tag{"c1", 0, 2}, true},
		{"mirage:c1/12.1;x", Tag{"c1", 12, 1}, true},
		{"", Tag{}, false},
		{"mirage:", Tag{}, false},
		{"mirage:/1.0", Tag{}, false},
		{"mirage:c1/1", Tag{}, false},
		{"mirage:c1/-1.0", Tag{}, false},
		{"mirage:c1/x.0", Tag{}, false},
		{"mirage:a/b/1.0", Tag{}, false},
	}
	for _, c := range cases {
		got, ok := ParseTag(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseTag(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseTag(f *testing.F) {
	for _, s := range []string{"mirage:c1/0.0", "x mirage:c-1/3.2 y", "mirage:a/b/1.0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tag, ok := ParseTag(s)
		if !ok {
			return
		}
		again, ok2 := ParseTag(tag.String())
		if !ok2 || again != tag {
			t.Fatalf("ParseTag(%q) = %+v; round trip gives %+v, %v", s, tag, again, ok2)
		}
	})
}

// TestDecodeSpecText: the log shows a job comment's chain specification as
// JSON, not base64; anything else passes through.
func TestDecodeSpecText(t *testing.T) {
	ch := &Chain{ID: "c-20261123-ab12cd", Name: "train", Script: "/home/u/t.sbatch", Policy: "lead", Segments: 3, TimeLimit: time.Hour}
	comment := ChainComment(ch, 1, 0)
	got := DecodeSpecText(comment)
	want := "mirage:c-20261123-ab12cd/1.0 spec: name train, script /home/u/t.sbatch, 3 segments, policy lead, max retries 0, limit 1h0m0s, 0 node(s), 0 GPU(s)"
	if got != want {
		t.Errorf("DecodeSpecText(%q) =\n%q, want\n%q", comment, got, want)
	}
	for _, plain := range []string{"", "mirage:c-1:0:0", "mirage:c-1/0.0 mirage-spec=!!notbase64", "REJECTED: sbatch said no"} {
		if got := DecodeSpecText(plain); got != plain {
			t.Errorf("DecodeSpecText(%q) = %q, want it unchanged", plain, got)
		}
	}
}
