package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

func init() { register(newSimCmd) }

// simOptions are the flags of mirage sim.
type simOptions struct {
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
	progress  io.Writer // stderr when it is a terminal, else nil
}

func newSimCmd() *cobra.Command {
	o := &simOptions{}
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
			if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 && cmd.ErrOrStderr() == os.Stderr {
				o.progress = cmd.ErrOrStderr()
			}
			return runSim(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file (required)")
	f.StringVar(&o.preset, "preset", "ls6", "cluster preset: ls6 or default (Slurm defaults; needs --slurm-conf for nodes)")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "read nodes, partitions, Priority* and SchedulerParameters from this slurm.conf (over the preset)")
	f.BoolVar(&o.report, "report", false, "compare simulated with recorded waits")
	f.BoolVar(&o.json, "json", false, "JSON output")
	f.StringVar(&o.jobsOut, "jobs", "", "write per-job simulated start/end as CSV to this file")
	f.IntVar(&o.nodes, "nodes", 0, "override: keep only the first N nodes")
	f.StringVar(&o.backfill, "backfill", "", "override: on or off")
	f.DurationVar(&o.bfWindow, "bf-window", 0, "override: bf_window")
	f.DurationVar(&o.latency, "sched-latency", -1, "override: event-triggered main pass latency bound")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the scheduling-latency draws")
	f.StringVar(&o.weights, "weights", "", "override priority weights: age=N,fairshare=N,size=N,partition=N,qos=N")
	o.traceOpts.add(cmd)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

func (o *simOptions) config() (sim.Config, error) {
	cfg, err := sim.Preset(o.preset)
	if err != nil {
		return cfg, withCode(exitUsage, err)
	}
	if o.slurmConf != "" {
		fh, err := os.Open(o.slurmConf)
		if err != nil {
			return cfg, withCode(exitBadInput, err)
		}
		defer fh.Close()
		if cfg, err = sim.ParseSlurmConf(fh, cfg); err != nil {
			return cfg, withCode(exitBadInput, err)
		}
	}
	if o.nodes > 0 && o.nodes < len(cfg.Nodes) {
		cfg.Nodes = cfg.Nodes[:o.nodes]
		for i := range cfg.Partitions {
			if len(cfg.Partitions[i].Nodes) > o.nodes {
				cfg.Partitions[i].Nodes = nil // all (remaining) nodes
			}
		}
	}
	switch o.backfill {
	case "on":
		cfg.Backfill = true
	case "off":
		cfg.Backfill = false
	case "":
	default:
		return cfg, withCode(exitUsage, fmt.Errorf("--backfill: want on or off, got %q", o.backfill))
	}
	if o.bfWindow > 0 {
		cfg.BFWindow = o.bfWindow
	}
	if o.latency >= 0 {
		cfg.SchedLatency = o.latency
	}
	cfg.Seed = o.seed
	if o.weights != "" {
		for _, kv := range strings.Split(o.weights, ",") {
			k, v, _ := strings.Cut(kv, "=")
			var x float64
			if _, err := fmt.Sscan(v, &x); err != nil {
				return cfg, withCode(exitUsage, fmt.Errorf("--weights: %q: %w", kv, err))
			}
			switch k {
			case "age":
				cfg.PriorityWeightAge = x
			case "fairshare":
				cfg.PriorityWeightFairshare = x
			case "size":
				cfg.PriorityWeightJobSize = x
			case "partition":
				cfg.PriorityWeightPartition = x
			case "qos":
				cfg.PriorityWeightQOS = x
			default:
				return cfg, withCode(exitUsage, fmt.Errorf("--weights: unknown weight %q", k))
			}
		}
	}
	if len(cfg.Nodes) == 0 {
		return cfg, withCode(exitUsage, errors.New("no nodes: use --preset ls6 or --slurm-conf"))
	}
	return cfg, nil
}

// progressBar draws a one-line bar of simulated time on a terminal.
type progressBar struct {
	w          io.Writer
	from, to   time.Time
	lastPct    int
	drawnSince bool
}

func (p *progressBar) update(now time.Time) {
	if p == nil || p.w == nil || !p.to.After(p.from) {
		return
	}
	pct := int(100 * now.Sub(p.from) / p.to.Sub(p.from))
	pct = min(max(pct, 0), 100)
	if pct == p.lastPct && p.drawnSince {
		return
	}
	p.lastPct, p.drawnSince = pct, true
	n := pct / 4
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %s", strings.Repeat("#", n), strings.Repeat(".", 25-n), pct, now.Format("2006-01-02"))
}

func (p *progressBar) done() {
	if p != nil && p.w != nil && p.drawnSince {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func runSim(out io.Writer, o *simOptions) error {
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
	bar := &progressBar{w: o.progress, lastPct: -1}
	for _, j := range jobs {
		if bar.from.IsZero() || j.Submit.Before(bar.from) {
			bar.from = j.Submit
		}
		if j.End.After(bar.to) {
			bar.to = j.End
		}
	}
	var prog func(time.Time)
	if o.progress != nil {
		prog = bar.update
	}
	wall := time.Now() // reporting only: wall-clock speed of the replay
	rep, res, err := sim.Fidelity(jobs, cfg, prog)
	bar.done()
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
