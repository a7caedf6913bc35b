// Command mirage is a Slurm-compatible proactive provisioner for GPU clusters:
// it pre-submits each successor of a chain of wall-clock-limited jobs so that it
// starts as its predecessor ends, and it trains and evaluates the policies that
// decide when.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	f := newFactory()
	err := execute(ctx, newRootCmd(f), os.Args[1:])
	stop()
	os.Exit(exitCode(err, f.ErrOut))
}

// newRootCmd builds the command tree on the factory's streams and world.
func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "mirage",
		Short: "Proactive provisioner for chains of GPU jobs on Slurm and Kubernetes",
		Long: `mirage keeps long-running GPU work (training runs, inference services) alive on
batch clusters with wall-clock limits. It submits each successor of a chain of
jobs ahead of time so that it starts as its predecessor ends, applies team rules
(quota, packing, borrowing) wherever it places work, and trains and evaluates the
policies that decide when to submit in a trace-driven Slurm simulator.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.In)
	root.SetOut(f.Out)
	root.SetErr(f.ErrOut)
	root.AddCommand(
		newVersionCmd(f, nil),
		newSubmitCmd(f, nil),
		newDaemonCmd(f, nil),
		newStatusCmd(f, nil),
		newLogCmd(f, nil),
		newCancelCmd(f, nil),
		newRecoverCmd(f, nil),
		newHandoffCmd(f, nil),
		newTracesCmd(f),
		newSimCmd(f, nil),
		newTrainCmd(f, nil),
		newModelsCmd(f),
		newPredictWaitCmd(f, nil),
		newEvalCmd(f, nil),
		newPlaceCmd(f, nil),
		newPackEvalCmd(f, nil),
		newK8sCmd(f),
		newGenDocsCmd(),
	)
	typeUsageErrors(root)
	return root
}

// execute runs the command line args on root.
func execute(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var fe *flagError
	if err != nil && cmd == root && !errors.As(err, &fe) {
		// The root runs nothing: its only own error is an unknown command.
		return &flagError{err}
	}
	return err
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode attaches an exit code to an error.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// Exit codes, mapped in one place.
const (
	exitOK          = 0
	exitFailure     = 1 // any other error
	exitUsage       = 2 // bad flags or arguments
	exitBadInput    = 3 // malformed input data (traces, scripts, config)
	exitUnavailable = 4 // backend (Slurm, API server, database) unreachable or locked
	exitRejected    = 5 // the backend refused a submission
	exitUnsafe      = 6 // state files another user owns or can write (refused, never used)
	exitInterrupted = 130
)

// exitCode prints err (if any) to stderr and maps it to the process exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "mirage:", err)
	var ee *exitError
	var fe *flagError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &fe):
		return exitUsage
	}
	return exitFailure
}
