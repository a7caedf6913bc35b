package slurm

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Sentinel errors for conditions a user can act on.
var (
	// ErrNotInstalled means a Slurm command is not on PATH (install slurm-client).
	ErrNotInstalled = fmt.Errorf("slurm commands not installed (Debian package slurm-client): %w", provisioner.ErrUnavailable)
	// ErrControllerDown means slurmctld did not answer.
	ErrControllerDown = fmt.Errorf("slurm controller (slurmctld) not reachable: %w", provisioner.ErrUnavailable)
	// ErrMungeDown means munge authentication failed (munged down or key mismatch).
	ErrMungeDown = fmt.Errorf("munge authentication failed (is munged running?): %w", provisioner.ErrUnavailable)
	// ErrPermission means Slurm refused the operation for this user.
	ErrPermission = errors.New("permission denied by slurm")
	// ErrUnsupportedVersion means the JSON came from a Slurm version this package cannot read.
	ErrUnsupportedVersion = errors.New("unsupported slurm JSON version")
	// ErrNoJSON means the command does not support --json (older Slurm); callers fall back to text.
	ErrNoJSON = errors.New("--json not supported")
)

// CommandError is a failed Slurm command with its stderr and a classified kind.
type CommandError struct {
	Cmd    string   // command name
	Args   []string // arguments
	Stderr string   // first line of stderr (trimmed)
	Kind   error    // sentinel (ErrControllerDown, ...) or nil when unclassified
	Err    error    // underlying exec error
}

// Error implements error.
func (e *CommandError) Error() string {
	var b strings.Builder
	b.WriteString(e.Cmd)
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Stderr != "" {
		b.WriteString(": ")
		b.WriteString(e.Stderr)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes both the kind and the underlying error to errors.Is/As.
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
}

// Error implements error.
func (e *RejectedError) Error() string { return "sbatch: submission rejected: " + e.Reason }

// Unwrap makes errors.Is(err, provisioner.ErrRejected) true.
func (e *RejectedError) Unwrap() error { return provisioner.ErrRejected }

// classify maps a command's failure to a sentinel kind and whether it is transient.
func classify(name string, stderr []byte, err error) (kind error, transient bool) {
	if errors.Is(err, exec.ErrNotFound) {
		return ErrNotInstalled, false
	}
	s := strings.ToLower(string(stderr))
	switch {
	case strings.Contains(s, "munge") && (strings.Contains(s, "encode failed") || strings.Contains(s, "decode failed") || strings.Contains(s, "authentication")),
		strings.Contains(s, "protocol authentication error"):
		return ErrMungeDown, false
	case name == "sacct" && (strings.Contains(s, "problem talking to the database") ||
		strings.Contains(s, "slurmdbd") || strings.Contains(s, "connection refused")),
		name == "sacctmgr" && strings.Contains(s, "connection refused"):
		return provisioner.ErrNoAccounting, true
	case strings.Contains(s, "unable to contact slurm controller"),
		strings.Contains(s, "socket timed out"),
		strings.Contains(s, "slurm_persist_conn_open"),
		strings.Contains(s, "connection refused"),
		strings.Contains(s, "slurm backup controller in standby mode"):
		return ErrControllerDown, true
	case strings.Contains(s, "access/permission denied"), strings.Contains(s, "permission denied"),
		strings.Contains(s, "access denied"), strings.Contains(s, "invalid user id"):
		return ErrPermission, false
	case strings.Contains(s, "invalid job id"), strings.Contains(s, "job id") && strings.Contains(s, "not found"):
		return provisioner.ErrNotFound, false
	case strings.Contains(s, "unrecognized option") && strings.Contains(s, "json"),
		strings.Contains(s, "invalid option") && strings.Contains(s, "json"):
		return ErrNoJSON, false
	}
	return nil, false
}
