package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/spf13/cobra"
)

// doneOptions are the flags of mirage done.
type doneOptions struct {
	f       *Factory
	mark    state.DoneMark
	segment string // --segment, or $MIRAGE_SEGMENT
	state   state.Location
}

func newDoneCmd(f *Factory, runF func(*doneOptions) error) *cobra.Command {
	o := &doneOptions{f: f}
	cmd := &cobra.Command{
		Use:   "done",
		Short: "From a segment's job script: say the chain's work is finished (the chain ends with this segment)",
		Long: `Run by a segment's job once the work is really finished: the chain ends when this
segment ends, whatever its state, and no successor is submitted (one queued ahead
is cancelled). Without it, a segment that exits 0 before its signal point (its
limit less its --signal lead and a minute) also ends an --until-done chain; one
that exits 0 later was stopped to checkpoint and the chain goes on.

It writes a marker into the state directory ($MIRAGE_STATE, which every segment
gets from submit: on a cluster, the same path in the shared home) and touches
nothing else; the next mirage daemon cycle reads it. The chain and segment come
from $MIRAGE_CHAIN and $MIRAGE_SEGMENT (or --chain and --segment, from anywhere).
In full: docs/guide/chains-and-daemon.md.`,
		Example: `  # the last line of the job script: train.py exits 0 once the run is complete
  python train.py --resume & wait $! && mirage done
  # from the login node, for the segment that runs now
  mirage done --chain c-20261123-ab12cd --segment 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m := &o.mark
			if m.Chain == "" {
				m.Chain = f.Getenv(provisioner.EnvChain)
			}
			if o.segment == "" {
				o.segment = f.Getenv(provisioner.EnvSegment)
			}
			if m.Job == "" {
				m.Job = f.Getenv("SLURM_JOB_ID")
			}
			if o.state.Dir == "" {
				o.state.Dir = f.Getenv(envState)
			}
			if m.Chain == "" || o.segment == "" {
				return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("no chain or segment: run mirage done inside a segment's job ($MIRAGE_CHAIN and $MIRAGE_SEGMENT are set there), or give --chain and --segment"))
			}
			seg, err := strconv.Atoi(o.segment)
			if err != nil || seg < 0 {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("segment %q: want a segment index, 0 or more (as mirage status CHAIN lists them)", o.segment))
			}
			m.Segment = seg
			if runF != nil {
				return runF(o)
			}
			return doneRun(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.mark.Chain, "chain", "", "chain id (default: $MIRAGE_CHAIN)")
	fl.StringVar(&o.segment, "segment", "", "segment index (default: $MIRAGE_SEGMENT)")
	fl.StringVar(&o.mark.Job, "job", "", "the segment's job id, which picks the attempt (default: $SLURM_JOB_ID; without one, the segment's latest attempt)")
	fl.StringVar(&o.state.Dir, "state", "", "state directory (default: $MIRAGE_STATE, else $XDG_STATE_HOME/mirage, else ~/.local/state/mirage)")
	return cmd
}

func doneRun(o *doneOptions) error {
	o.mark.Time = o.f.Now()
	path, err := o.state.MarkDone(o.mark)
	if err != nil {
		return stateErr(err)
	}
	job := ""
	if o.mark.Job != "" {
		job = " (job " + o.mark.Job + ")"
	}
	_, err = fmt.Fprintf(o.f.Out, "chain %s segment %d%s: the work is finished; the chain ends when this segment ends (marker %s, read by the next mirage daemon cycle)\n",
		o.mark.Chain, o.mark.Segment, job, path)
	return err
}
