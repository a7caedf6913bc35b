package traces

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	csv := strings.Join(CSVHeader, ",") + "\n"
	empty := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(empty, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(empty, Options{}); !errors.Is(err, ErrNoJobs) || err.Error() != empty+": no jobs" {
		t.Errorf("empty trace: %v, want %q wrapping ErrNoJobs", err, empty+": no jobs")
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.csv"), Options{}); err == nil || errors.Is(err, ErrNoJobs) {
		t.Errorf("missing trace: %v", err)
	}
	two := filepath.Join(dir, "two.csv")
	f, err := os.Create(two)
	if err != nil {
		t.Fatal(err)
	}
	w := NewCSVWriter(f)
	t0 := time.Date(2023, 1, 2, 10, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b"} {
		if err := w.Write(Job{ID: id, Submit: t0, Start: t0, End: t0.Add(time.Hour), Nodes: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	jobs, err := ReadFile(two, Options{})
	if err != nil || len(jobs) != 2 || jobs[0].ID != "a" || jobs[1].ID != "b" || !jobs[1].End.Equal(t0.Add(time.Hour)) {
		t.Errorf("ReadFile = %+v, %v", jobs, err)
	}
}

func TestParseTime(t *testing.T) {
	chi, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	// Chicago is UTC−6 in February (CST) and UTC−5 in July (CDT).
	ok := []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"2023-02-01", time.Date(2023, 2, 1, 6, 0, 0, 0, time.UTC)},
		{"2023-02-01T04:30", time.Date(2023, 2, 1, 10, 30, 0, 0, time.UTC)},
		{"2023-07-01T04:30:15", time.Date(2023, 7, 1, 9, 30, 15, 0, time.UTC)},
		{"2023-02-01 23:00", time.Date(2023, 2, 2, 5, 0, 0, 0, time.UTC)},
		{"2023-02-01T04:00:00Z", time.Date(2023, 2, 1, 4, 0, 0, 0, time.UTC)},
		{"2023-02-01T04:00:00+02:00", time.Date(2023, 2, 1, 2, 0, 0, 0, time.UTC)},
		{"1970-01-01T00:00:00Z", time.Unix(0, 0)},
	}
	for _, tt := range ok {
		if got, err := ParseTime(tt.in, chi); err != nil || !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	bad := map[string]string{
		"yesterday":            `"yesterday": want RFC 3339 or YYYY-MM-DD[THH:MM[:SS]] (in the trace's zone)`,
		"2023-13-01":           `"2023-13-01": want RFC 3339 or YYYY-MM-DD[THH:MM[:SS]] (in the trace's zone)`,
		"1969-12-31":           `"1969-12-31": want a time from 1970 on (trace times are Unix times)`,
		"1960-01-01T00:00:00Z": `"1960-01-01T00:00:00Z": want a time from 1970 on (trace times are Unix times)`,
	}
	for in, want := range bad {
		if _, err := ParseTime(in, chi); err == nil || err.Error() != want {
			t.Errorf("ParseTime(%q) error %v, want %q", in, err, want)
		}
	}
}
