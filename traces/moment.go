package traces

import (
	"fmt"
	"time"
)

// A Moment is a time a person gave on a command line or in a sweep file.
// With an offset ("2023-02-01T00:00:00-06:00", "…Z") it is an instant;
// without one ("2023-02-01", "2023-02-01T04:30") it is a wall-clock time,
// read in the zone of the trace it applies to (In). Every command reads
// --from, --until and the like this one way, so the same words name the
// same instant in mirage train, mirage eval and mirage predict-wait.
type Moment struct {
	t    time.Time // the instant, or the wall clock in UTC's fields
	wall bool      // no offset was given: t's fields are read in the trace's zone
}

// momentLayouts are the zone-less forms, in the order tried.
var momentLayouts = []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"}

// ParseMoment parses RFC 3339 (an instant) or a date, "YYYY-MM-DDTHH:MM[:SS]"
// or "YYYY-MM-DD HH:MM[:SS]" (a wall-clock time). "" is the zero Moment.
// Times before 1970 are refused (trace times are Unix times). The error
// quotes s and says what is wanted, for the caller to prefix with what s
// was, e.g. a flag's name.
func ParseMoment(s string) (Moment, error) {
	if s == "" {
		return Moment{}, nil
	}
	m := Moment{}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		for _, layout := range momentLayouts {
			if t, err = time.ParseInLocation(layout, s, time.UTC); err == nil {
				m.wall = true
				break
			}
		}
	}
	if err != nil {
		return Moment{}, fmt.Errorf("%q: want RFC 3339 or YYYY-MM-DD[THH:MM[:SS]] (in the trace's zone)", s)
	}
	m.t = t
	if m.wall && t.Year() < 1970 || !m.wall && t.Before(time.Unix(0, 0)) {
		return Moment{}, fmt.Errorf("%q: want a time from 1970 on (trace times are Unix times)", s)
	}
	return m, nil
}

// IsZero reports whether m is the zero Moment (nothing was given).
func (m Moment) IsZero() bool { return m.t.IsZero() }

// HasZone reports whether m was given with an offset (an instant).
func (m Moment) HasZone() bool { return !m.IsZero() && !m.wall }

// In is the instant m names in loc, the zone of the trace it applies to:
// a wall-clock time is read in loc, an instant is itself. The zero Moment
// gives the zero time.
func (m Moment) In(loc *time.Location) time.Time {
	if m.IsZero() || !m.wall {
		return m.t
	}
	if loc == nil {
		loc = time.UTC
	}
	y, mo, d := m.t.Date()
	h, mi, s := m.t.Clock()
	return time.Date(y, mo, d, h, mi, s, m.t.Nanosecond(), loc)
}

// String is m as it was given, in canonical form: RFC 3339 for an instant,
// "YYYY-MM-DDTHH:MM:SS" for a wall-clock time, "" for the zero Moment.
func (m Moment) String() string {
	switch {
	case m.IsZero():
		return ""
	case m.wall:
		return m.t.Format("2006-01-02T15:04:05")
	}
	return m.t.Format(time.RFC3339)
}

// MarshalText writes String, so a Moment round-trips through JSON and YAML.
func (m Moment) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads what ParseMoment reads. YAML's own timestamps
// ("2023-02-01" unquoted) arrive here as their text, so a sweep file means
// what the same words mean on the command line.
func (m *Moment) UnmarshalText(b []byte) error {
	v, err := ParseMoment(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseTime parses s (ParseMoment) and reads it in loc (Moment.In).
func ParseTime(s string, loc *time.Location) (time.Time, error) {
	m, err := ParseMoment(s)
	if err != nil {
		return time.Time{}, err
	}
	return m.In(loc), nil
}
