// Package cmdutil is the command-line plumbing of mirage's commands that is
// not about any one command: exit codes and the errors that carry them,
// usage errors typed as such (with "did you mean" hints for mistyped flags),
// and the mapping of library error kinds to exit codes.
//
// Contract: an error returned by a command maps to exactly one exit code
// (ExitCode); a usage error found by cobra (unknown flag, missing argument,
// missing required flag) is a *FlagError and exits 2.
package cmdutil
