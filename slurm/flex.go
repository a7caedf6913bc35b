package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// flexNum reads a number as 22.05 writes it (plain number or null) and as
// 23.x+ write it ({"set":bool,"infinite":bool,"number":n}); also a quoted number.
type flexNum struct {
	N        int64
	Set      bool
	Infinite bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexNum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*f = flexNum{}
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	switch b[0] {
	case '{':
		var o struct {
			Set      *bool           `json:"set"`
			Infinite bool            `json:"infinite"`
			Number   json.RawMessage `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		var n flexNum
		if len(o.Number) > 0 {
			if err := n.UnmarshalJSON(o.Number); err != nil {
				return err
			}
		}
		f.N = n.N
		f.Set = (o.Set == nil || *o.Set) && n.Set
		f.Infinite = o.Infinite
		return nil
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			return nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("number %q: %w", s, err)
		}
		f.N, f.Set = int64(v), true
		return nil
	case 't', 'f':
		f.Set = b[0] == 't'
		if f.Set {
			f.N = 1
		}
		return nil
	}
	if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		f.N, f.Set = v, true
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("number %s: %w", b, err)
	}
	f.N, f.Set = int64(v), true
	return nil
}

// unix converts seconds since the epoch to a time; 0/unset is the zero time.
func (f flexNum) unix() time.Time {
	if !f.Set || f.Infinite || f.N <= 0 {
		return time.Time{}
	}
	return time.Unix(f.N, 0)
}

// minutes converts a limit in minutes; unset or infinite is 0.
func (f flexNum) minutes() time.Duration {
	if !f.Set || f.Infinite || f.N <= 0 {
		return 0
	}
	return time.Duration(f.N) * time.Minute
}

// flexStrings reads a string (22.05) or an array of strings (23.11+).
type flexStrings []string

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexStrings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*f = nil
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	if b[0] == '[' {
		var a []string
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		*f = a
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s != "" {
		*f = flexStrings{s}
	}
	return nil
}

// first returns the first element or "".
func (f flexStrings) first() string {
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// meta is the "meta" object of every --json output.
type meta struct {
	Plugin struct {
		Type       string `json:"type"`
		DataParser string `json:"data_parser"`
	} `json:"plugin"`
	SlurmOld *slurmVersion `json:"Slurm"` // 22.05, 23.02
	SlurmNew *slurmVersion `json:"slurm"` // 23.11+
}

type slurmVersion struct {
	Version struct {
		Major flexNum `json:"major"`
		Minor flexNum `json:"minor"`
		Micro flexNum `json:"micro"`
	} `json:"version"`
	Release string `json:"release"`
}

// Version describes the Slurm release that produced a JSON document.
type Version struct {
	Major, Minor int    // e.g. 22, 5
	Release      string // e.g. "22.05.8"
	Schema       string // plugin type or data parser, e.g. "openapi/v0.0.38"
}

// String formats the version for messages.
func (v Version) String() string {
	r := v.Release
	if r == "" {
		r = fmt.Sprintf("%d.%02d", v.Major, v.Minor)
	}
	if v.Schema != "" {
		r += " (" + v.Schema + ")"
	}
	return r
}

// version extracts the version and rejects releases this package cannot read.
func (m *meta) version(what string) (Version, error) {
	var v Version
	sv := m.SlurmNew
	if sv == nil {
		sv = m.SlurmOld
	}
	if sv != nil {
		v.Major, v.Minor, v.Release = int(sv.Version.Major.N), int(sv.Version.Minor.N), sv.Release
	}
	v.Schema = m.Plugin.Type
	if m.Plugin.DataParser != "" {
		v.Schema = m.Plugin.DataParser
	}
	if sv == nil && v.Schema == "" {
		return v, fmt.Errorf("%s: no meta.slurm version in the JSON: %w", what, ErrUnsupportedVersion)
	}
	if sv != nil && v.Major < 22 {
		return v, fmt.Errorf("%s: Slurm %s is older than 22.05: %w", what, v, ErrUnsupportedVersion)
	}
	return v, nil
}
