package slurm

import (
	"errors"
	"io/fs"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Sentinel errors for conditions a user can act on. Test them with errors.Is;
// the unavailability ones also match provisioner.ErrUnavailable.
var (
	// ErrNotInstalled means a Slurm command was not found on PATH.
	ErrNotInstalled = wrapSentinel("Slurm commands not found: install the client (Debian: slurm-client) or set PATH", provisioner.ErrUnavailable)
	// ErrControllerDown means slurmctld did not answer (down, unreachable, or overloaded).
	ErrControllerDown = wrapSentinel("Slurm controller (slurmctld) not reachable: check `scontrol ping` and SLURM_CONF", provisioner.ErrUnavailable)
	// ErrMungeDown means MUNGE authentication failed (munged not running, or a key mismatch).
	ErrMungeDown = wrapSentinel("MUNGE authentication failed: is munged running (`munge -n | unmunge`)?", provisioner.ErrUnavailable)
	// ErrTimeout means a command did not finish within its per-call timeout.
	ErrTimeout = wrapSentinel("Slurm command timed out", provisioner.ErrUnavailable)
	// ErrPermission means Slurm refused the operation for this user.
	ErrPermission = errors.New("permission denied by Slurm")
	// ErrJobFinished means the job already ended, so it cannot be signalled.
	ErrJobFinished = wrapSentinel("job already completing or completed", provisioner.ErrNotFound)
	// ErrNoJSON means the command has no usable --json (built without it, or
	// too old); the Client then uses the text formats.
	ErrNoJSON = errors.New("--json output not available")
)

// sentinel is an error with a message that also matches a parent sentinel.
type sentinel struct {
	msg    string
	parent error
}

func wrapSentinel(msg string, parent error) error { return &sentinel{msg, parent} }

// Error implements error.
func (e *sentinel) Error() string { return e.msg }

// Unwrap returns the parent sentinel.
func (e *sentinel) Unwrap() error { return e.parent }

// CommandError is a Slurm command that failed, with what it printed and a
// classified kind.
type CommandError struct {
	Cmd      string   // command name, e.g. "squeue"
	Args     []string // its arguments
	Stderr   string   // what it printed on stderr (trimmed, at most a few lines)
	Kind     error    // sentinel (ErrControllerDown, provisioner.ErrNoAccounting, ...) or nil when unclassified
	Err      error    // the underlying exec error
	Attempts int      // how many times it ran
	raw      []byte   // full stderr of the last run
}

// Error implements error: "squeue: <kind>: <stderr> (after 3 attempts)".
func (e *CommandError) Error() string {
	var b strings.Builder
	b.WriteString(e.Cmd)
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	switch {
	case e.Stderr != "":
		b.WriteString(": ")
		b.WriteString(e.Stderr)
	case e.Err != nil:
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Attempts > 1 {
		b.WriteString(" (after ")
		b.WriteString(strconv.Itoa(e.Attempts))
		b.WriteString(" attempts)")
	}
	return b.String()
}

// Unwrap exposes the kind and the underlying error to errors.Is and errors.As.
func (e *CommandError) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// RejectedError is a submission Slurm refused, with Slurm's reason.
type RejectedError struct {
	Reason string // Slurm's message, e.g. "Requested time limit is invalid (missing or exceeds some limit)"
	Stderr string // everything sbatch printed on stderr
}

// Error implements error.
func (e *RejectedError) Error() string { return "sbatch: submission rejected: " + e.Reason }

// Unwrap makes errors.Is(err, provisioner.ErrRejected) true.
func (e *RejectedError) Unwrap() error { return provisioner.ErrRejected }

// classify maps a failed command's stderr and error to a sentinel kind and
// says whether the failure is transient (worth retrying a query).
func classify(name string, stderr []byte, err error) (kind error, transient bool) {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return ErrNotInstalled, false
	}
	s := strings.ToLower(string(stderr))
	has := func(subs ...string) bool {
		for _, x := range subs {
			if strings.Contains(s, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("munge encode failed", "munge decode failed", "protocol authentication error",
		"auth_g_create", "invalid authentication credential", "munged"),
		has("munge") && has("socket communication error", "failed to connect", "no such file"):
		return ErrMungeDown, false
	case (name == "sacct" || name == "sacctmgr") && has("problem talking to the database",
		"slurmdbd", "connection refused", "unable to connect to database", "database is busy"):
		return provisioner.ErrNoAccounting, true
	case has("unable to contact slurm controller", "socket timed out", "connection refused",
		"backup controller in standby mode", "zero bytes were transmitted", "communication connection failure",
		"slurmctld is busy", "unable to establish controller machine", "temporarily unable to accept"):
		return ErrControllerDown, true
	case has("access/permission denied", "permission denied", "access denied", "invalid user id",
		"not authorized", "user not found on this system"):
		return ErrPermission, false
	case has("already completing or completed", "job has already finished"):
		return ErrJobFinished, false
	case has("invalid job id", "job id not found", "invalid job_id", "unknown job"):
		return provisioner.ErrNotFound, false
	case has("--json") && has("unrecognized", "invalid option", "unknown option", "not supported"),
		has("unrecognized option '--json'", "unrecognized option `--json'"),
		has("unable to load") && has("openapi", "data_parser", "serializer"),
		has("data_parser") && has("not found", "failed"):
		return ErrNoJSON, false
	}
	return nil, false
}

// connectFailed reports whether a failure happened before any request reached
// the controller (so nothing can have been submitted).
func connectFailed(stderr []byte) bool {
	s := strings.ToLower(string(stderr))
	return strings.Contains(s, "connect failure") || strings.Contains(s, "connection refused") ||
		strings.Contains(s, "unable to establish controller machine")
}

// sentMaybe reports whether stderr also tells of a failure after a request
// may have reached the controller (a timed-out send or receive): then a
// connect failure beside it does not prove that nothing was submitted.
func sentMaybe(stderr []byte) bool {
	s := strings.ToLower(string(stderr))
	return strings.Contains(s, "timed out") || strings.Contains(s, "timeout") || strings.Contains(s, "zero bytes were transmitted")
}

// rejection extracts Slurm's reason from sbatch's stderr: the text after
// "Batch job submission failed: ", with any other "sbatch: error:" lines in
// parentheses (they often name the culprit: "invalid partition specified:
// x"); without that line, the "sbatch: error:" lines themselves.
func rejection(stderr []byte) string {
	var main string
	var others []string
	for l := range strings.SplitSeq(string(stderr), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if r, ok := strings.CutPrefix(l, "sbatch: error: Batch job submission failed: "); ok {
			main = r
			continue
		}
		r, ok := strings.CutPrefix(l, "sbatch: error: ")
		if !ok {
			r = strings.TrimPrefix(l, "sbatch: ")
		}
		if r != "" && !slices.Contains(others, r) {
			others = append(others, r)
		}
	}
	switch {
	case main == "":
		return strings.Join(others, "; ")
	case len(others) > 0:
		return main + " (" + strings.Join(others, "; ") + ")"
	}
	return main
}

// trimStderr keeps the first few non-empty lines of stderr for messages.
func trimStderr(b []byte) string {
	var out []string
	for l := range strings.SplitSeq(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if len(out) == 4 {
				break
			}
		}
	}
	s := strings.Join(out, "; ")
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return s
}
