package cmdutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Exit codes, mapped in one place (docs/reference/exit-codes.md).
const (
	ExitOK          = 0
	ExitFailure     = 1 // any other error
	ExitUsage       = 2 // bad flags or arguments
	ExitBadInput    = 3 // malformed input data (traces, scripts, config)
	ExitUnavailable = 4 // backend (Slurm, API server, database) unreachable or locked
	ExitRejected    = 5 // the backend refused a submission
	ExitUnsafe      = 6 // state files another user owns or can write (refused, never used)
	ExitInterrupted = 130
)

// ExitError carries a specific exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// WithCode attaches an exit code to an error (nil stays nil).
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// FlagError is a usage error cobra found (flag, argument); exit 2.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// ExitCode prints err (if any) to stderr and maps it to the process exit code.
func ExitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "mirage:", err)
	var ee *ExitError
	var fe *FlagError
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &fe):
		return ExitUsage
	}
	return ExitFailure
}

// ErrCode is the exit code of the errors that wrap Kind.
type ErrCode struct {
	Kind error
	Code int
}

// Coded gives err the exit code of the first kind in codes it wraps; an
// error that already has an exit code keeps it.
func Coded(err error, codes []ErrCode) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	for _, c := range codes {
		if errors.Is(err, c.Kind) {
			return WithCode(c.Code, err)
		}
	}
	return err
}

// Kinds gives each error kind the exit code code, for Coded's tables.
func Kinds(code int, kinds ...error) []ErrCode {
	out := make([]ErrCode, len(kinds))
	for i, k := range kinds {
		out[i] = ErrCode{Kind: k, Code: code}
	}
	return out
}

// PrintJSON writes v as indented JSON.
func PrintJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// PrintView prints a result: as JSON (the document j) with --json, else as
// its text.
func PrintView(out io.Writer, asJSON bool, j any, v interface{ WriteText(io.Writer) error }) error {
	if asJSON {
		return PrintJSON(out, j)
	}
	return v.WriteText(out)
}
