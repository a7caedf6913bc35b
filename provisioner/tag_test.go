package provisioner

import "testing"

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
