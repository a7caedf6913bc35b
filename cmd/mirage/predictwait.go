package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/slurm"
)

// predictWaitOptions are the flags of mirage predict-wait.
type predictWaitOptions struct {
	f                                 *Factory
	query                             models.WaitQuery // Nodes, Partition and Account bound; the rest parsed from timeLimit and gres
	timeLimit, gres                   string
	modelsDir, snapshot, saveSnapshot string
	trace, at                         string
	sim                               sim.Options // the simulated cluster of --trace
	slurmConf, slurmBin               string      // the live cluster
	slurmTimeout, history             time.Duration
	json                              bool
	traceOpts                         traceFlags
}

func newPredictWaitCmd(factory *Factory, runF func(*predictWaitOptions) error) *cobra.Command {
	o := &predictWaitOptions{f: factory, sim: sim.Options{Latency: -1}}
	cmd := &cobra.Command{
		Use: "predict-wait [-N NODES] [-t TIME] [--gres gpu:N] [-p PART] [-A ACCT] --models DIR [--snapshot FILE | --trace FILE --at TIME]",
		Example: `  mirage predict-wait -N 8 -t 48:00:00 --gres gpu:3 -p gpu-a100 --models ls6-models/
  mirage predict-wait -N 1 -t 2:00:00 --models ls6-models/ --trace ls6.log.gz --at 2023-02-10T12:00
  mirage predict-wait -N 4 --models ls6-models/ --snapshot snap.json --json`,
		Short: "Predict how long a job of a given shape would wait if submitted now",
		Long: `Predict the queue wait of a job of this shape if submitted now (p10–p90), with
the wait predictor of mirage train --model wait, from the live Slurm cluster, a
--snapshot FILE or a --trace FILE --at TIME. See docs/guide/training-and-evaluation.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runPredictWait(cmd.Context(), factory.Out, o)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.query.Nodes, "nodes", "N", 1, "nodes")
	f.StringVarP(&o.timeLimit, "time", "t", "48:00:00", "time limit (Slurm format: minutes, HH:MM:SS, D-HH:MM:SS)")
	f.StringVar(&o.gres, "gres", "", "generic resources per node, e.g. gpu:3 or gpu:a100:3 (default: whole nodes' GPUs)")
	f.StringVarP(&o.query.Partition, "partition", "p", "", "partition (default: the cluster's default)")
	f.StringVarP(&o.query.Account, "account", "A", "", "account (its fair-share standing is a feature)")
	f.StringVar(&o.modelsDir, "models", "", "models directory holding wait/ (required)")
	f.StringVar(&o.snapshot, "snapshot", "", "cluster snapshot JSON file instead of the live cluster")
	f.StringVar(&o.saveSnapshot, "save-snapshot", "", "also write the snapshot used as JSON to this file")
	f.StringVar(&o.trace, "trace", "", "trace file: predict in the simulator's state at --at")
	f.StringVar(&o.at, "at", "", "trace time of the simulated state (with --trace): RFC 3339, or YYYY-MM-DD[THH:MM[:SS]] in the trace's zone")
	f.StringVar(&o.sim.Preset, "preset", "ls6", "cluster preset for --trace: ls6, default or a preset file (mirage sim calibrate)")
	f.StringVar(&o.sim.SlurmConf, "sim-conf", "", "slurm.conf of the simulated cluster for --trace (over --preset)")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "live cluster: slurm.conf (default: $SLURM_CONF, else Slurm's own default)")
	f.StringVar(&o.slurmBin, "slurm-bin", "", "live cluster: directory holding squeue, sinfo, sacct (default: search PATH)")
	f.DurationVar(&o.slurmTimeout, "slurm-timeout", 30*time.Second, "live cluster: timeout of each Slurm command")
	f.Uint64Var(&o.sim.Seed, "seed", 1, "simulator seed for --trace")
	f.DurationVar(&o.history, "history", provisioner.DefaultHistoryWindow, "history window (sacct) the features look at")
	f.BoolVar(&o.json, "json", false, "print as JSON")
	o.traceOpts.add(cmd)
	_ = cmd.MarkFlagRequired("models")
	return cmd
}

func runPredictWait(ctx context.Context, w io.Writer, o *predictWaitOptions) error {
	q := &o.query
	if err := q.ParseSbatch(o.timeLimit, o.gres); err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	if o.snapshot != "" && o.trace != "" {
		return cmdutil.WithCode(cmdutil.ExitUsage, errors.New("give either --snapshot or --trace, not both"))
	}
	pred, err := models.LoadWaitPredictor(filepath.Join(o.modelsDir, "wait"))
	if err != nil {
		if errors.Is(err, features.ErrSchemaMismatch) {
			return cmdutil.WithCode(cmdutil.ExitBadInput, err)
		}
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("%w (train it with mirage train --model wait --out %s)", err, o.modelsDir))
	}
	st, err := o.state(ctx, pred.RecordedHistory())
	if err != nil {
		return err
	}
	if err := q.Runnable(st); err != nil {
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("%w: no wait to predict", err))
	}
	if o.saveSnapshot != "" {
		b, err := provisioner.SnapshotFile{Snapshot: st.Snap, History: st.Hist}.Encode()
		if err == nil {
			err = safefile.WriteFile(o.saveSnapshot, 0o600, func(w io.Writer) error { _, err := w.Write(b); return err })
		}
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitUnavailable, fmt.Errorf("--save-snapshot %s: %w", o.saveSnapshot, err))
		}
	}
	a, err := pred.Answer(st, *q)
	if err != nil {
		return err
	}
	if a.Warning = pred.ShapeWarning(st); a.Warning != "" {
		fmt.Fprintf(o.f.ErrOut, "mirage: %s\n", a.Warning)
	}
	return cmdutil.PrintView(w, o.json, a, a)
}

// state gets the cluster state from the chosen source. With a trace, the
// history is the recorded one when recordedHistory (the predictor learned
// from it, as `mirage train --wait-recorded` trains), else the replay's.
func (o *predictWaitOptions) state(ctx context.Context, recordedHistory bool) (*models.ClusterState, error) {
	switch {
	case o.snapshot != "":
		st, err := models.SnapshotFileState(o.snapshot)
		return st, cmdutil.WithCode(cmdutil.ExitBadInput, err)
	case o.trace != "":
		if o.at == "" {
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, errors.New("--trace needs --at TIME"))
		}
		cfg, err := simConfig(o.sim)
		if err != nil {
			return nil, err
		}
		jobs, err := o.traceOpts.read(o.trace)
		if err != nil {
			return nil, err
		}
		at, err := parseWhen("at", o.at, jobs[0].Submit.Location())
		if err != nil {
			return nil, err
		}
		snap, hist, err := scenario.StateAt(ctx, filepath.Base(o.trace), jobs, cfg, at, o.history, recordedHistory)
		switch {
		case errors.Is(err, scenario.ErrOutsideReplay):
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--at %s: %w", o.at, err))
		case err != nil:
			return nil, cmdutil.WithCode(cmdutil.ExitBadInput, err)
		}
		source := "simulated " + filepath.Base(o.trace)
		if recordedHistory {
			source += " (history as recorded)"
		}
		return &models.ClusterState{Now: snap.Time, Snap: snap, Hist: hist, Source: source}, nil
	}
	c, h, err := o.f.LiveCluster(ctx, o)
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitUnavailable, err)
	}
	if err := ping(ctx, c); err != nil { // within seconds, as submit and the daemon do
		return nil, err
	}
	st, err := models.LiveState(ctx, c, h, o.history)
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitUnavailable, err)
	}
	if pl, ok := c.(partitionLister); ok {
		parts, err := pl.Partitions(ctx)
		if err != nil {
			return nil, cmdutil.WithCode(cmdutil.ExitUnavailable, fmt.Errorf("partitions: %w", err))
		}
		for _, p := range parts {
			st.Partitions = append(st.Partitions, models.PartitionLimit{Name: p.Name, Default: p.Default, MaxTime: p.MaxTime})
		}
	}
	return st, nil
}

// partitionLister is a live cluster that lists its partitions' limits (Slurm).
type partitionLister interface {
	Partitions(ctx context.Context) ([]slurm.Partition, error)
}
