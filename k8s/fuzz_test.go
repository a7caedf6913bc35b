package k8s

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParseRef: every accepted id round-trips through String.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"pod/ns/a", "job/ns/a", "ns/a", "a", "//", "pod//a", "job/ns/a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		r2, err := ParseRef(r.String())
		if err != nil || r2 != r {
			t.Fatalf("ParseRef(%q) = %v; reparsed %v, %v", s, r, r2, err)
		}
	})
}

// FuzzNames: whatever the job name or comment, the generated name prefix and
// the chain label are valid for the API server.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"Train ResNet_50", "", "--", "mirage:c-1/seg 3", "é漢字", "a.b_c-d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// generateName gets a 5-character suffix after the '-'.
		if n := dnsName(s) + "-abcde"; len(validation.IsDNS1123Label(n)) > 0 {
			t.Fatalf("dnsName(%q) = %q: %v", s, n, validation.IsDNS1123Label(n))
		}
		if v := labelValue(s); len(validation.IsValidLabelValue(v)) > 0 {
			t.Fatalf("labelValue(%q) = %q: %v", s, v, validation.IsValidLabelValue(v))
		}
	})
}
