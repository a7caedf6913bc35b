package slurmfmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind says what a duration field holds.
type Kind uint8

const (
	// Set: a length was given (it may be zero; see the "0" row of meaningOf).
	Set Kind = iota
	// Unlimited: Slurm's INFINITE, no limit at all.
	Unlimited
	// NotSet: no value was recorded (Slurm's NO_VAL, an unset field).
	NotSet
	// PartitionLimit: the job asked for no limit of its own, so the
	// partition's limit applies (sacct's rendering of a NO_VAL time limit).
	PartitionLimit
)

func (k Kind) String() string {
	switch k {
	case Set:
		return "set"
	case Unlimited:
		return "unlimited"
	case NotSet:
		return "not set"
	case PartitionLimit:
		return "partition limit"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Duration is a parsed Slurm duration: a Kind and, when Kind is Set, the
// length (whole seconds, never negative).
type Duration struct {
	Kind  Kind
	Value time.Duration
}

// meaningOf is the one table of the words Slurm writes in a duration field
// instead of a length, matched case-insensitively after trimming spaces:
//
//	word              Kind            where Slurm writes or reads it
//	UNLIMITED         Unlimited       time_str2secs() reads it; secs2time_str() and
//	                                  mins2time_str() print INFINITE as it (parse_time.c)
//	INFINITE          Unlimited       time_str2secs(); slurm.conf(5) MaxTime=INFINITE
//	-1                Unlimited       time_str2secs() reads "-1" as INFINITE
//	Partition_Limit   PartitionLimit  sacct(1) Timelimit of a job that gave no --time
//	                                  (its limit is NO_VAL: the partition's applies)
//	N/A, NONE,        NotSet          sinfo %L and scontrol print a NO_VAL default time
//	NOT_SET, (null),                  as N/A or NONE, squeue as NOT_SET; "(null)" is
//	""                                Slurm's unset string
//	INVALID           NotSet          secs2time_str() prints it for a negative value
//
// A number is not a word: "0" is Set with length 0. sbatch(1) --time says
// "A time limit of zero requests that no time limit be imposed", so a caller
// reading a request treats Set-and-zero as unlimited (Duration.IsUnlimited
// does); a caller reading a recorded limit may treat it as unknown.
var meaningOf = map[string]Kind{
	"UNLIMITED":       Unlimited,
	"INFINITE":        Unlimited,
	"-1":              Unlimited,
	"PARTITION_LIMIT": PartitionLimit,
	"N/A":             NotSet,
	"NONE":            NotSet,
	"NOT_SET":         NotSet,
	"(NULL)":          NotSet,
	"":                NotSet,
	"INVALID":         NotSet,
}

// MaxDuration bounds what ParseDuration accepts: 100 years (Slurm stores
// limits as 32-bit minutes, about 8,000 years, but no site sets more than a
// few months). It keeps every sum far from overflowing time.Duration.
const MaxDuration = 100 * 365 * 24 * time.Hour

// ErrDuration is wrapped by every error of ParseDuration.
var ErrDuration = errors.New("bad Slurm duration")

// ParseDuration reads a Slurm duration. The forms are those of sbatch(1)
// --time: "minutes", "minutes:seconds", "hours:minutes:seconds",
// "days-hours", "days-hours:minutes" and "days-hours:minutes:seconds"; each
// field is one or more decimal digits (no sign, no empty field; a field may
// exceed its usual range, as in Slurm's sscanf-based time_str2secs). The
// special words of meaningOf give their Kind with Value 0. Anything else,
// or a length over MaxDuration, is an error wrapping ErrDuration.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if k, ok := meaningOf[strings.ToUpper(s)]; ok {
		return Duration{Kind: k}, nil
	}
	sec, ok := durationSeconds(s)
	if !ok {
		return Duration{}, fmt.Errorf("%w %q: want minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED", ErrDuration, s)
	}
	if sec > int64(MaxDuration/time.Second) {
		return Duration{}, fmt.Errorf("%w %q: longer than 100 years", ErrDuration, s)
	}
	return Duration{Kind: Set, Value: time.Duration(sec) * time.Second}, nil
}

// durationSeconds parses the numeric forms; ok is false on any syntax error
// or when a field has more than 9 digits.
func durationSeconds(s string) (int64, bool) {
	var f [4]int64 // fields in order of appearance
	n := 0         // fields read
	days := false
	cur, digits := int64(0), 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if digits == 9 {
				return 0, false
			}
			cur = cur*10 + int64(s[i]-'0')
			digits++
			continue
		}
		if digits == 0 || n == len(f) {
			return 0, false // empty field, stray character, or too many fields
		}
		f[n], n, cur, digits = cur, n+1, 0, 0
		switch {
		case i == len(s):
		case s[i] == '-' && n == 1 && !days:
			days = true
		case s[i] == ':':
		default:
			return 0, false
		}
	}
	if days {
		switch n {
		case 2: // days-hours
			return f[0]*86400 + f[1]*3600, true
		case 3: // days-hours:minutes
			return f[0]*86400 + f[1]*3600 + f[2]*60, true
		case 4: // days-hours:minutes:seconds
			return f[0]*86400 + f[1]*3600 + f[2]*60 + f[3], true
		}
		return 0, false
	}
	switch n {
	case 1: // minutes
		return f[0] * 60, true
	case 2: // minutes:seconds
		return f[0]*60 + f[1], true
	case 3: // hours:minutes:seconds
		return f[0]*3600 + f[1]*60 + f[2], true
	}
	return 0, false
}

// IsUnlimited reports whether d, read from a job's request (sbatch --time),
// asks for no limit: UNLIMITED/INFINITE, or zero (sbatch(1): "A time limit
// of zero requests that no time limit be imposed").
func (d Duration) IsUnlimited() bool {
	return d.Kind == Unlimited || (d.Kind == Set && d.Value == 0)
}

// String renders d as Slurm prints it: FormatDuration for a length,
// "UNLIMITED", "Partition_Limit" and "N/A" for the other kinds.
// ParseDuration reads every result back to d (for Set lengths in whole
// seconds).
func (d Duration) String() string {
	switch d.Kind {
	case Set:
		return FormatDuration(d.Value)
	case Unlimited:
		return "UNLIMITED"
	case PartitionLimit:
		return "Partition_Limit"
	}
	return "N/A"
}

// FormatDuration prints a length as Slurm's secs2time_str() does
// (parse_time.c): "HH:MM:SS" under a day, "D-HH:MM:SS" from a day on,
// "INVALID" when negative. A fraction of a second is rounded up (a limit
// never shrinks by printing it).
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "INVALID"
	}
	sec := int64(d / time.Second)
	if d%time.Second != 0 {
		sec++
	}
	days, h, m, s := sec/86400, sec/3600%24, sec/60%60, sec%60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}

// Slurm's sentinels for an unset and an unlimited 32-bit number (slurm.h
// NO_VAL and INFINITE). Slurm 22.05's JSON prints them as plain numbers
// (a time of 4294967294 is "no time", not a date in 2106; a time limit of
// 4294967295 minutes is UNLIMITED); 23.02 and later wrap every number in
// {"set","infinite","number"} instead. The 64-bit ones (NO_VAL64,
// INFINITE64) are larger still: callers treat any value from NoVal up as a
// sentinel.
const (
	NoVal    = 0xfffffffe
	Infinite = 0xffffffff
)
