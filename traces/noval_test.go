package traces

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestSacctJSONNoVal: Slurm 22.05 prints NO_VAL (4294967294) and INFINITE
// (4294967295) as plain numbers; a time is then "none", not a date in 2106,
// and a limit is "no limit known", not 8,000 years (issue #17).
func TestSacctJSONNoVal(t *testing.T) {
	doc, err := os.ReadFile("testdata/sacct-22.05.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, sentinel := range []string{"4294967294", "4294967295"} {
		b := strings.Replace(string(doc), `"end": 1709287805`, `"end": `+sentinel, 1)
		b = strings.Replace(b, `"limit": 60`, `"limit": `+sentinel, 1)
		if !strings.Contains(b, `"limit": `+sentinel) || !strings.Contains(b, `"end": `+sentinel) {
			t.Fatal("testdata/sacct-22.05.json changed: update the replaced fields")
		}
		r, err := NewReader(bytes.NewReader([]byte(b)), "noval.json", Options{Format: FormatSacctJSON})
		if err != nil {
			t.Fatal(err)
		}
		j, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !j.End.IsZero() || j.TimeLimit != 0 {
			t.Errorf("%s: end %v, limit %v; want none", sentinel, j.End, j.TimeLimit)
		}
	}
}
