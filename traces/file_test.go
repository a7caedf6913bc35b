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

// TestMoment: a time with an offset is an instant wherever it is read; one
// without is a wall-clock time, read in the zone of the trace it meets.
func TestMoment(t *testing.T) {
	chi, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	wall, err := ParseMoment("2023-02-01")
	if err != nil {
		t.Fatal(err)
	}
	// Chicago is UTC−6 in February: midnight there is 06:00 UTC.
	if got, want := wall.In(chi), time.Date(2023, 2, 1, 6, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("2023-02-01 in Chicago = %v, want %v", got, want)
	}
	if got, want := wall.In(time.UTC), time.Date(2023, 2, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("2023-02-01 in UTC = %v, want %v", got, want)
	}
	if wall.HasZone() || wall.String() != "2023-02-01T00:00:00" {
		t.Errorf("wall moment: HasZone %v, String %q", wall.HasZone(), wall.String())
	}
	inst, err := ParseMoment("2023-02-01T00:00:00-06:00")
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []*time.Location{time.UTC, chi} {
		if got := inst.In(loc); !got.Equal(time.Date(2023, 2, 1, 6, 0, 0, 0, time.UTC)) {
			t.Errorf("instant in %v = %v", loc, got)
		}
	}
	if !inst.HasZone() || inst.String() != "2023-02-01T00:00:00-06:00" {
		t.Errorf("instant: HasZone %v, String %q", inst.HasZone(), inst.String())
	}
	// Text round trip (JSON, YAML): the same moment back, wall or not.
	for _, m := range []Moment{wall, inst, {}} {
		b, _ := m.MarshalText()
		var back Moment
		if err := back.UnmarshalText(b); err != nil || back.String() != m.String() || back.HasZone() != m.HasZone() || !back.In(chi).Equal(m.In(chi)) {
			t.Errorf("round trip of %q: %+v, %v", b, back, err)
		}
	}
	var zero Moment
	if !zero.IsZero() || !zero.In(chi).IsZero() {
		t.Error("the zero Moment names no time")
	}
	if err := zero.UnmarshalText([]byte("2023-02-30")); err == nil {
		t.Error("2023-02-30 accepted")
	}
}
