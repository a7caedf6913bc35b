package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

// simOptions are the flags of mirage sim.
type simOptions struct {
	f         *Factory
	trace     string
	preset    string
	slurmConf string
	report    bool
	json      bool
	jobsOut   string
	nodes     int
	backfill  string
	bfWindow  time.Duration
	latency   time.Duration
	seed      uint64
	weights   string
	traceOpts traceFlags
}

func newSimCmd(f *Factory, runF func(*simOptions) error) *cobra.Command {
	o := &simOptions{f: f}
	cmd := &cobra.Command{
		Use:   "sim --trace FILE [--preset ls6 | --slurm-conf FILE] [--report] [--json]",
		Short: "Replay a job trace in the discrete-event Slurm simulator",
		Long: `Replay a recorded trace (any format mirage traces reads) in the simulator:
recorded submit times, runtimes capped at the limit, multifactor priority, main
pass and backfill. Prints per-job simulated start and end (--jobs FILE writes
them as CSV) and, with --report, the fidelity of simulated against recorded
waits for jobs without recorded holds (median and p90 absolute error, Pearson
correlation, KS distance; overall and by job size).

Hold detection and the ls6 preset's fidelity: docs/guide/training-and-evaluation.md
and docs/results/fidelity.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return simRun(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.trace, "trace", "", "trace file (required)")
	fl.StringVar(&o.preset, "preset", "ls6", "cluster preset: ls6 or default (Slurm defaults; needs --slurm-conf for nodes)")
	fl.StringVar(&o.slurmConf, "slurm-conf", "", "read nodes, partitions, Priority* and SchedulerParameters from this slurm.conf (over the preset)")
	fl.BoolVar(&o.report, "report", false, "compare simulated with recorded waits")
	fl.BoolVar(&o.json, "json", false, "JSON output")
	fl.StringVar(&o.jobsOut, "jobs", "", "write per-job simulated start/end as CSV to this file")
	fl.IntVar(&o.nodes, "nodes", 0, "override: keep only the first N nodes")
	fl.StringVar(&o.backfill, "backfill", "", "override: on or off")
	fl.DurationVar(&o.bfWindow, "bf-window", 0, "override: bf_window")
	fl.DurationVar(&o.latency, "sched-latency", -1, "override: event-triggered main pass latency bound")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the scheduling-latency draws")
	fl.StringVar(&o.weights, "weights", "", "override priority weights: age=N,fairshare=N,size=N,partition=N,qos=N")
	o.traceOpts.add(cmd)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

// config builds the simulated cluster: an invalid option is a usage
// error, an unreadable slurm.conf bad input.
func (o *simOptions) config() (sim.Config, error) {
	cfg, err := sim.Options{Preset: o.preset, SlurmConf: o.slurmConf, Nodes: o.nodes, Backfill: o.backfill, BFWindow: o.bfWindow,
		Latency: o.latency, Seed: o.seed, Weights: o.weights}.Config()
	switch {
	case errors.Is(err, sim.ErrOption):
		return cfg, withCode(exitUsage, err)
	case err != nil:
		return cfg, withCode(exitBadInput, err)
	}
	return cfg, nil
}

func simRun(o *simOptions) error {
	out := o.f.Out
	cfg, err := o.config()
	if err != nil {
		return err
	}
	topts, err := o.traceOpts.options()
	if err != nil {
		return err
	}
	r, err := traces.Open(o.trace, topts)
	if err != nil {
		return traceErr(err)
	}
	var jobs []traces.Job
	for j, err := range traces.All(r) {
		if err != nil {
			r.Close()
			return traceErr(err)
		}
		jobs = append(jobs, j)
	}
	r.Close()
	if len(jobs) == 0 {
		return withCode(exitBadInput, fmt.Errorf("%s: no jobs", o.trace))
	}
	var from, to time.Time
	for _, j := range jobs {
		if from.IsZero() || j.Submit.Before(from) {
			from = j.Submit
		}
		if j.End.After(to) {
			to = j.End
		}
	}
	bar := term.NewProgress(o.f.progress(), "")
	var prog func(time.Time)
	if o.f.progress() != nil && to.After(from) {
		prog = func(now time.Time) {
			bar.Fraction(float64(now.Sub(from))/float64(to.Sub(from)), now.Format("2006-01-02"))
		}
	}
	wall := time.Now() // reporting only: wall-clock speed of the replay
	rep, res, err := sim.Fidelity(jobs, cfg, prog)
	bar.Done()
	if err != nil {
		return withCode(exitBadInput, err)
	}
	elapsed := time.Since(wall)
	if o.jobsOut != "" {
		if err := writeSimJobs(o.jobsOut, res); err != nil {
			return err
		}
	}
	summary := struct {
		Trace    string       `json:"trace"`
		Preset   string       `json:"preset"`
		Nodes    int          `json:"nodes"`
		Seed     uint64       `json:"seed"`
		WallSec  float64      `json:"wall_s"`
		Report   *sim.Report  `json:"report,omitempty"`
		Jobs     []sim.Result `json:"jobs,omitempty"`
		Replayed int          `json:"replayed"`
	}{Trace: o.trace, Preset: o.preset, Nodes: len(cfg.Nodes), Seed: cfg.Seed, WallSec: elapsed.Seconds(), Replayed: rep.Jobs}
	if o.report {
		summary.Report = rep
	}
	if o.json {
		if !o.report && o.jobsOut == "" {
			summary.Jobs = res
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(summary)
	}
	fmt.Fprintf(out, "replayed %d jobs (%d skipped) over %.1f simulated days on %d nodes in %.2f s\n", rep.Jobs, rep.Skipped, rep.SimDays, len(cfg.Nodes), elapsed.Seconds())
	if !o.report {
		if o.jobsOut == "" {
			return writeSimCSV(out, res)
		}
		return nil
	}
	fmt.Fprintf(out, "excluded from comparison: %v\n", rep.Excluded)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tjobs\tmedian|err|\tp90|err|\tpearson\tKS\tsim p50\trec p50\tsim p90\trec p90\t")
	for _, s := range rep.Stats {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t\n", s.Group, s.Jobs, dur(s.MedianAbsErr), dur(s.P90AbsErr), s.Pearson, s.KS, dur(s.SimMedian), dur(s.RecMedian), dur(s.SimP90), dur(s.RecP90))
	}
	return tw.Flush()
}

func dur(sec float64) string {
	return (time.Duration(sec) * time.Second).Round(time.Second).String()
}

func writeSimCSV(w io.Writer, res []sim.Result) error {
	fmt.Fprintln(w, "id,submit,start,end,state,nodes")
	for _, r := range res {
		fmt.Fprintf(w, "%s,%s,%s,%s,%s,%d\n", r.ID, r.Submit.Format(time.RFC3339), fmtT(r.Start), fmtT(r.End), r.State, r.Nodes)
	}
	return nil
}

func fmtT(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

func writeSimJobs(path string, res []sim.Result) error {
	tmp := path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := writeSimCSV(fh, res); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
