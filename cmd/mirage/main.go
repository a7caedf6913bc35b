// Command mirage is a Slurm-compatible proactive provisioner for GPU clusters:
// it pre-submits each successor of a chain of wall-clock-limited jobs so that it
// starts as its predecessor ends, and it trains and evaluates the policies that
// decide when.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	f := newFactory()
	stopProfiles := startProfiles(os.Getenv)
	err := execute(ctx, newRootCmd(f), os.Args[1:])
	stopProfiles()
	stop()
	os.Exit(cmdutil.ExitCode(err, f.ErrOut))
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
		newControllerCmd(f, nil),
		newStatusCmd(f, nil),
		newLogCmd(f, nil),
		newCancelCmd(f, nil),
		newUpdateCmd(f, nil),
		newRecoverCmd(f, nil),
		newHandoffCmd(f, nil),
		newDoneCmd(f, nil),
		newTracesCmd(f),
		newSiteCmd(f, nil),
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
	cmdutil.TypeUsageErrors(root, submitHint)
	return root
}

// execute runs the command line args on root.
func execute(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(args)
	return cmdutil.Execute(root, func() (*cobra.Command, error) { return root.ExecuteContextC(ctx) })
}
