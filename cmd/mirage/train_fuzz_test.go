package main

import (
	"testing"
	"time"
)

// FuzzParseWhen: window bounds never panic, and a parsed bound prints back to itself.
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"2023-02-01", "2023-02-01T04:00", "2023-02-01T04:00:05", "2023-02-01T04:00:00Z", "2023-02-01 04:00", "", "yesterday", "2023-13-01"} {
		f.Add(s)
	}
	chi, _ := time.LoadLocation("America/Chicago")
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := parseWhen("from", s, chi)
		if err != nil || s == "" {
			return
		}
		again, err := parseWhen("from", tm.Format(time.RFC3339Nano), chi)
		if err != nil || !again.Equal(tm) {
			t.Fatalf("%q → %s → %v, %v", s, tm, again, err)
		}
	})
}
