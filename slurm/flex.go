package slurm

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// flexNum is a number as Slurm prints it: plain (22.05) or as
// {"set":bool,"infinite":bool,"number":n} (23.02 and later).
type flexNum struct {
	N        int64
	Set      bool
	Infinite bool
}

// known reports whether f holds a number: set, not infinite, and not one of
// the NO_VAL/INFINITE sentinels that 22.05 prints as plain numbers.
func (f flexNum) known() bool {
	return f.Set && !f.Infinite && f.N < slurmfmt.NoVal
}

// unix converts seconds since the epoch to a time; 0, unset or infinite
// (including 22.05's plain NO_VAL 4294967294 and INFINITE 4294967295, which
// would otherwise read as dates in 2106) is the zero time.
func (f flexNum) unix() time.Time {
	if !f.known() || f.N <= 0 {
		return time.Time{}
	}
	return time.Unix(f.N, 0).UTC()
}

// minutes converts a limit in minutes; unset, infinite, or beyond 100 years
// (an overflow of time.Duration otherwise) is 0: no limit.
func (f flexNum) minutes() time.Duration {
	if !f.Set || f.Infinite || f.N <= 0 || f.N > int64(slurmfmt.MaxDuration/time.Minute) {
		return 0
	}
	return time.Duration(f.N) * time.Minute
}

// int returns the number as an int, 0 when unset or infinite.
func (f flexNum) int() int {
	if !f.Set || f.Infinite || f.N < 0 || f.N > 1<<31-1 {
		return 0
	}
	return int(f.N)
}

// Version describes the Slurm release (and JSON schema) that produced a document.
type Version struct {
	Major, Minor, Micro int    // e.g. 22, 5, 8
	Release             string // e.g. "22.05.8"
	Schema              string // plugin type or data parser, e.g. "openapi/v0.0.38", "data_parser/v0.0.41"
}

// String formats the version for messages, e.g. "Slurm 22.05.8 (openapi/v0.0.38)".
func (v Version) String() string {
	r := v.Release
	if r == "" && (v.Major != 0 || v.Minor != 0) {
		r = fmt.Sprintf("%d.%02d", v.Major, v.Minor)
	}
	if r == "" {
		r = "(unknown release)"
	}
	s := "Slurm " + r
	if v.Schema != "" {
		s += " (" + v.Schema + ")"
	}
	return s
}

// Oldest and newest Slurm releases whose JSON this package was written against.
const (
	minMajor, minMinor = 22, 5
	maxMajor, maxMinor = 25, 11
)

// Known reports whether the release is one this package was written and
// tested against (22.05 to 25.11). Newer releases are still read by field
// name; callers log a warning for them.
func (v Version) Known() bool {
	n := v.Major*100 + v.Minor
	return n >= minMajor*100+minMinor && n <= maxMajor*100+maxMinor
}

// ErrUnsupportedVersion means a document came from a Slurm release this package cannot read.
var ErrUnsupportedVersion = errors.New("unsupported Slurm JSON output")

// readMeta reads the "meta" object of every --json output: meta.plugin
// (22.05, 23.11+) or meta.plugins (23.02), and meta.slurm (23.11+) or
// meta.Slurm (22.05, 23.02). When both spellings appear, the newer one wins,
// whatever the order.
func readMeta(s *scanner) (Version, error) {
	type plugin struct{ ptype, parser string }
	type release struct {
		major, minor, micro int
		release             string
	}
	var plugins [2]plugin   // [0] "plugin", [1] "plugins"
	var releases [2]release // [0] "slurm", [1] "Slurm"
	readPlugin := func(p *plugin) error {
		*p = plugin{}
		return s.object(func(k []byte) error {
			var err error
			switch string(k) {
			case "type":
				p.ptype, err = s.str()
			case "data_parser":
				p.parser, err = s.str()
			default:
				err = s.skip()
			}
			return err
		})
	}
	readRelease := func(r *release) error {
		*r = release{}
		return s.object(func(k []byte) error {
			switch string(k) {
			case "release":
				v, err := s.str()
				r.release = v
				return err
			case "version":
				r.major, r.minor, r.micro = 0, 0, 0
				return s.object(func(k []byte) error {
					n, err := s.num()
					switch string(k) {
					case "major":
						r.major = n.int()
					case "minor":
						r.minor = n.int()
					case "micro":
						r.micro = n.int()
					}
					return err
				})
			}
			return s.skip()
		})
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "plugin":
			return readPlugin(&plugins[0])
		case "plugins":
			return readPlugin(&plugins[1])
		case "slurm":
			return readRelease(&releases[0])
		case "Slurm":
			return readRelease(&releases[1])
		}
		return s.skip()
	})
	var v Version
	for i := len(plugins) - 1; i >= 0; i-- {
		if p := plugins[i]; p.ptype != "" || p.parser != "" {
			v.Schema = nonEmpty(p.parser, p.ptype)
		}
	}
	for i := len(releases) - 1; i >= 0; i-- {
		if r := releases[i]; r != (release{}) {
			v.Major, v.Minor, v.Micro, v.Release = r.major, r.minor, r.micro, r.release
		}
	}
	if v.Major == 0 && v.Release != "" {
		// Some outputs give only the release string.
		fmt.Sscanf(v.Release, "%d.%d.%d", &v.Major, &v.Minor, &v.Micro)
	}
	return v, err
}

// checkVersion rejects documents without a version and releases older than 22.05.
func checkVersion(what string, v Version, sawMeta bool) error {
	if !sawMeta || (v.Major == 0 && v.Schema == "") {
		return fmt.Errorf("%s: no meta.slurm.version in the output, cannot tell which Slurm wrote it: %w", what, ErrUnsupportedVersion)
	}
	if v.Major != 0 && v.Major*100+v.Minor < minMajor*100+minMinor {
		return fmt.Errorf("%s: output of %s, older than Slurm 22.05 (use the text formats): %w", what, v, ErrUnsupportedVersion)
	}
	return nil
}

// JSONError is a --json document whose "errors" list is not empty. Slurm
// 22.05's squeue and sinfo exit 0 with such a document (and no jobs) when
// slurmctld cannot be reached, so it must not be read as an empty queue.
type JSONError struct {
	What     string   // command, e.g. "squeue --json"
	Messages []string // one line per entry: "source: description (error)"
}

// Error implements error.
func (e *JSONError) Error() string {
	return e.What + ": Slurm reported: " + strings.Join(e.Messages, "; ")
}

// readErrors reads the "errors" list: objects with some of description,
// error, source (strings) and error_number or errno (numbers).
func readErrors(s *scanner) ([]string, error) {
	var out []string
	err := s.array(func() error {
		if s.peek() != '{' {
			v, err := s.str()
			if v != "" {
				out = append(out, v)
			}
			return err
		}
		var desc, errText, source string
		var num, errno flexNum
		err := s.object(func(k []byte) error {
			var err error
			switch string(k) {
			case "description":
				desc, err = s.str()
			case "error":
				errText, err = s.str()
			case "source":
				source, err = s.str()
			case "error_number":
				num, err = s.num()
			case "errno":
				errno, err = s.num()
			default:
				err = s.skip()
			}
			return err
		})
		if !num.Set {
			num = errno
		}
		msg := nonEmpty(desc, errText, "error")
		if source != "" {
			msg = source + ": " + msg
		}
		if errText != "" && errText != msg && desc != "" {
			msg += " (" + errText + ")"
		}
		if num.Set && num.N != 0 {
			msg += fmt.Sprintf(" [error %d]", num.N)
		}
		out = append(out, msg)
		return err
	})
	return out, err
}

// parseDoc walks a top-level --json document: meta first or anywhere, the
// errors list, and fn for every other top-level key. It wraps syntax errors
// with what and, when known, the version; a non-empty errors list is a
// *JSONError.
func parseDoc(what string, b []byte, fn func(s *scanner, key []byte) error) (Version, error) {
	s := &scanner{b: b}
	var v Version
	var errs []string
	sawMeta := false
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "meta":
			sawMeta = true
			var err error
			v, err = readMeta(s)
			return err
		case "errors":
			var err error
			errs, err = readErrors(s)
			return err
		}
		return fn(s, key)
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		if sawMeta {
			return v, fmt.Errorf("%s: output of %s: %w", what, v, err)
		}
		return v, fmt.Errorf("%s: %w", what, err)
	}
	if err := checkVersion(what, v, sawMeta); err != nil {
		return v, err
	}
	if len(errs) > 0 {
		return v, &JSONError{What: what, Messages: errs}
	}
	return v, nil
}

// missingField reports a document without the list a parser needs.
func missingField(what, field string, v Version) error {
	hint := ""
	if !v.Known() {
		hint = fmt.Sprintf(" (mirage reads Slurm %d.%02d to %d.%02d)", minMajor, minMinor, maxMajor, maxMinor)
	}
	return fmt.Errorf("%s: no %q list in the output of %s%s: %w", what, field, v, hint, ErrUnsupportedVersion)
}

// nonEmpty returns the first non-empty string.
func nonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}

// clean maps Slurm's placeholders for "nothing" to "".
// reasonOf is a job's reason as squeue or sacct prints it, cleaned as
// clean does, except that a pending job's "None" is kept
// (provisioner.PendingNone): slurmctld has not looked at it yet, and on
// its next pass it takes the nodes it fits (what pin's spare nodes count).
func reasonOf(state provisioner.JobState, s string) string {
	if state == provisioner.StatePending && strings.TrimSpace(s) == provisioner.PendingNone {
		return provisioner.PendingNone
	}
	return clean(s)
}

func clean(s string) string {
	switch strings.TrimSpace(s) {
	case "", "(null)", "N/A", "None", "none", "None assigned":
		return ""
	}
	return s
}
