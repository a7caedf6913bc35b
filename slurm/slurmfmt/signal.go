package slurmfmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSignal is wrapped by every error of ParseSignal.
var ErrSignal = errors.New("bad --signal")

// Signal is what sbatch(1) --signal asks for: a signal sent to the job Lead
// before its end time.
type Signal struct {
	// Name is the signal as Slurm names it: one of signalNames without
	// "SIG" ("USR1"), or its number in decimal when given as a number
	// ("10"). "" means no --signal was given (the zero Signal).
	Name string
	// Batch ("B:") sends it to the batch shell only; without it every job
	// step is signalled, but not the batch shell itself (sbatch(1)).
	Batch bool
	// Reservation ("R:") lets the job overlap a reservation with
	// MaxStartDelay set.
	Reservation bool
	// Lead is sig_time: how long before the job's end time the signal is
	// sent (whole seconds, 0–65535 s; 60 s when not given). sbatch(1):
	// "Due to the resolution of event handling by Slurm, the signal may be
	// sent up to 60 seconds earlier than specified."
	Lead time.Duration
}

// DefaultSignalLead is sig_time when --signal gives none (sbatch(1): "If a
// sig_num is specified without any sig_time, the default time will be 60
// seconds").
const DefaultSignalLead = 60 * time.Second

// maxSignalField bounds sig_num and sig_time: both are 16-bit in Slurm.
const maxSignalField = 0xffff

// signalNames are the names Slurm's sig_name2num accepts (with or without
// "SIG", in any case), from Slurm's src/common/proc_args.c signals_mapping.
var signalNames = []string{"HUP", "INT", "QUIT", "ABRT", "KILL", "ALRM", "TERM", "USR1", "USR2", "URG", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "XCPU"}

// ParseSignal reads an sbatch --signal value, [{R|B}:]SIG[@SECS] as
// sbatch(1) writes it, the way Slurm's get_signal_opts reads it (Slurm's
// src/common/proc_args.c):
//
//   - optional flags first: R, then B, then R again ("B", "R", "BR", "RB"),
//     each in either case, then an optional ':';
//   - SIG is a number from 1 to 65535 or one of the names of signalNames,
//     with or without "SIG", in either case ("USR1", "SIGUSR1", "usr1");
//   - @SECS, the lead, is a whole number of seconds from 0 to 65535;
//     without it the lead is DefaultSignalLead.
//
// Errors wrap ErrSignal and say what sbatch accepts.
func ParseSignal(s string) (Signal, error) {
	var sig Signal
	bad := func(why string) (Signal, error) {
		return Signal{}, fmt.Errorf("%w %q: %s (sbatch --signal=[{R|B}:]SIG[@SECS], e.g. B:USR1@600)", ErrSignal, s, why)
	}
	rest := s
	flag := func(c byte) bool {
		if len(rest) > 0 && (rest[0] == c || rest[0] == c+'a'-'A') {
			rest = rest[1:]
			return true
		}
		return false
	}
	sig.Reservation = flag('R')
	sig.Batch = flag('B')
	if flag('R') {
		sig.Reservation = true
	}
	rest = strings.TrimPrefix(rest, ":")
	name, secs, hasSecs := strings.Cut(rest, "@")
	switch n, err := strconv.Atoi(strings.TrimSpace(name)); {
	case err == nil && n >= 1 && n <= maxSignalField:
		sig.Name = strconv.Itoa(n)
	case err == nil:
		return bad(fmt.Sprintf("signal number %d: want 1 to %d", n, maxSignalField))
	default:
		up := strings.ToUpper(strings.TrimSpace(name))
		up = strings.TrimPrefix(up, "SIG")
		for _, known := range signalNames {
			if up == known {
				sig.Name = known
			}
		}
		if sig.Name == "" {
			return bad(fmt.Sprintf("unknown signal %q: want a number or one of %s", name, strings.Join(signalNames, " ")))
		}
	}
	sig.Lead = DefaultSignalLead
	if hasSecs {
		n, err := strconv.Atoi(secs)
		if err != nil || n < 0 || n > maxSignalField || strings.ContainsAny(secs, "+- ") {
			return bad(fmt.Sprintf("@%s: want whole seconds from 0 to %d", secs, maxSignalField))
		}
		sig.Lead = time.Duration(n) * time.Second
	}
	return sig, nil
}

// String writes the signal back as sbatch reads it, flags and lead always
// given ("B:USR1@600"); "" for the zero Signal.
func (s Signal) String() string {
	if s.Name == "" {
		return ""
	}
	var b strings.Builder
	if s.Reservation {
		b.WriteByte('R')
	}
	if s.Batch {
		b.WriteByte('B')
	}
	if b.Len() > 0 {
		b.WriteByte(':')
	}
	fmt.Fprintf(&b, "%s@%d", s.Name, int64(s.Lead/time.Second))
	return b.String()
}
