package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/traces"
	"github.com/spf13/cobra"
)

func newTracesCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "traces",
		Short: "Read, summarise, convert and synthesise job traces",
		Long: `Read historical job traces (format sniffed unless --format; gzip transparently),
summarise them, convert them to canonical CSV, or synthesise LS6-like traces.

Formats and malformed rows: docs/guide/training-and-evaluation.md.`,
	}
	cmd.AddCommand(newTracesStatsCmd(f, nil), newTracesConvertCmd(f, nil), newTracesSynthCmd(f, nil))
	return cmd
}

// traceFlags are the reading options shared by the trace-reading commands.
type traceFlags struct{ opts traces.Options }

func (f *traceFlags) add(cmd *cobra.Command) {
	names := make([]string, len(traces.Formats))
	for i, n := range traces.Formats {
		names[i] = string(n)
	}
	cmd.Flags().StringVar((*string)(&f.opts.Format), "format", "", "input format (default: sniffed): "+strings.Join(names, ", "))
	cmd.Flags().BoolVar(&f.opts.SkipBad, "skip-bad", false, "skip malformed rows, counting them, instead of failing")
	cmd.Flags().StringVar(&f.opts.Zone, "tz", "", "IANA zone of zone-less timestamps (default: America/Chicago for ls6, UTC otherwise)")
	_ = cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

// read reads every job of a trace file.
func (f *traceFlags) read(path string) ([]traces.Job, error) {
	jobs, err := traces.ReadFile(path, f.opts)
	return jobs, cmdutil.Coded(err, traceCodes)
}

// parseWhen parses the value of the time flag --flag (traces.ParseTime).
func parseWhen(flag, s string, loc *time.Location) (time.Time, error) {
	t, err := traces.ParseTime(s, loc)
	if err != nil {
		return t, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--%s %w", flag, err))
	}
	return t, nil
}

type tracesStatsOptions struct {
	f *Factory
	traceFlags
	json  bool
	files []string
}

func newTracesStatsCmd(f *Factory, runF func(*tracesStatsOptions) error) *cobra.Command {
	o := &tracesStatsOptions{f: f}
	cmd := &cobra.Command{
		Use: "stats FILE...",
		Example: `  mirage traces stats ls6-a100-until-2023-03-01.log.gz
  mirage traces stats jobs.swf sacct.txt --json`,
		Short: "Summarise traces: jobs, span, node/GPU counts, runtime and wait percentiles, limit hits, peak use",
		Long:  `Summarise trace files, read together as one trace; see docs/guide/training-and-evaluation.md.`,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.files = args
			if runF != nil {
				return runF(o)
			}
			return tracesStatsRun(o)
		},
	}
	o.add(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	return cmd
}

func tracesStatsRun(o *tracesStatsOptions) error {
	s, err := traces.StatsFiles(o.files, o.opts, o.f.ErrOut)
	if err != nil {
		return cmdutil.Coded(err, traceCodes)
	}
	return cmdutil.PrintView(o.f.Out, o.json, s, &s)
}

type tracesConvertOptions struct {
	f *Factory
	traceFlags
	in, out string
}

func newTracesConvertCmd(f *Factory, runF func(*tracesConvertOptions) error) *cobra.Command {
	o := &tracesConvertOptions{f: f}
	cmd := &cobra.Command{
		Use: "convert FILE --out OUT.csv",
		Example: `  mirage traces convert sacct-dump.txt --out jobs.csv
  mirage traces convert ls6.log.gz --tz America/Chicago --out ls6.csv`,
		Short: "Convert a trace to mirage's canonical CSV",
		Long:  `Convert a trace to mirage's canonical CSV, written atomically; see docs/guide/training-and-evaluation.md.`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.in = args[0]
			if runF != nil {
				return runF(o)
			}
			return tracesConvertRun(o)
		},
	}
	o.add(cmd)
	cmd.Flags().StringVar(&o.out, "out", "", "output CSV file (required)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func tracesConvertRun(o *tracesConvertOptions) error {
	r, err := traces.Open(o.in, o.opts)
	if err != nil {
		return cmdutil.Coded(err, traceCodes)
	}
	defer r.Close()
	n, err := traces.Convert(r, o.out)
	if err != nil {
		return cmdutil.Coded(err, traceCodes)
	}
	traces.ReportSkipped(o.f.ErrOut, o.in, r)
	_, err = fmt.Fprintf(o.f.ErrOut, "wrote %d jobs to %s\n", n, o.out)
	return err
}

type tracesSynthOptions struct {
	f                 *Factory
	like, out, format string
	days              int
	seed              uint64
}

func newTracesSynthCmd(f *Factory, runF func(*tracesSynthOptions) error) *cobra.Command {
	o := &tracesSynthOptions{f: f}
	cmd := &cobra.Command{
		Use: "synth --like ls6 --days D --seed S [--out FILE]",
		Example: `  mirage traces synth --like ls6 --days 14 --seed 1 --out synth.log
  mirage traces synth --days 3 --format csv > synth.csv`,
		Short: "Generate a synthetic trace fitted to a real one (LS6)",
		Long: `Generate a synthetic trace fitted to the LS6 A100 trace, the same for a seed;
see docs/guide/training-and-evaluation.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return tracesSynthRun(o)
		},
	}
	cmd.Flags().StringVar(&o.like, "like", "ls6", "trace to imitate (ls6)")
	cmd.Flags().IntVar(&o.days, "days", 7, "days of submissions")
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "random seed")
	cmd.Flags().StringVar(&o.out, "out", "", "output file (default stdout)")
	cmd.Flags().StringVar(&o.format, "format", "ls6", "output format: ls6 or csv")
	return cmd
}

func tracesSynthRun(o *tracesSynthOptions) error {
	if o.days <= 0 {
		return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--days must be positive, got %d", o.days))
	}
	jobs, err := traces.Synth(o.like, o.days, o.seed)
	if err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	if err := traces.WriteSynth(o.f.Out, o.out, traces.Format(o.format), jobs); err != nil {
		return cmdutil.Coded(err, cmdutil.Kinds(cmdutil.ExitUsage, traces.ErrUnknownFormat))
	}
	if o.out == "" || o.out == "-" {
		return nil
	}
	_, err = fmt.Fprintf(o.f.ErrOut, "wrote %d jobs to %s\n", len(jobs), o.out)
	return err
}
