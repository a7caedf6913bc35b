package eval

import (
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"path/filepath"
	"time"

	"github.com/mirage-gpu/mirage/traces"
)

// Spec is an experiment as mirage eval's command line gives it: its own
// fields, or a sweep file that says everything (with the cell to run, or
// the job-array script to write instead). Experiment turns it into an
// Experiment.
type Spec struct {
	Traces     []string
	Format     string
	SkipBad    bool
	Policies   []string
	Models     string
	From       string // RFC 3339, or YYYY-MM-DD[THH:MM[:SS]] in the trace's zone ("" = default)
	Until      string
	Nodes      []int
	Limit      time.Duration
	Warmup     time.Duration
	Interval   time.Duration
	Cycle      time.Duration
	Horizon    time.Duration
	HandOff    time.Duration
	Work       time.Duration // run protocol
	Restart    time.Duration
	Checkpoint time.Duration
	NoHandOff  bool
	Workload   string
	LoadScales []float64
	Protocol   string
	Preset     string
	SlurmConf  string
	Seed       uint64
	Title      string
	Out        string

	Sweep     string // sweep file (made absolute by Experiment)
	Cell      int    // with Sweep: run only this cell (-1: all)
	EmitArray bool   // with Sweep: write the job-array script instead
}

// SweepFields are the Spec fields a sweep file says, by flag name: none of
// them may be given with a sweep.
var SweepFields = []string{"trace", "policies", "from", "until", "nodes", "limit", "warmup", "interval", "cycle", "horizon", "load-scale", "protocol", "preset", "slurm-conf", "seed", "title", "models", "format", "skip-bad", "handoff", "work", "restart", "checkpoint", "no-handoff", "workload"}

// setupError is a Spec that cannot describe an experiment: its message as
// given, and Is(ErrBadSetup).
type setupError struct{ err error }

func (e *setupError) Error() string        { return e.err.Error() }
func (e *setupError) Unwrap() error        { return e.err }
func (e *setupError) Is(target error) bool { return target == protocol.ErrBadSetup }

func badSetup(err error) error { return &setupError{err} }

// Experiment builds the experiment: from the sweep file when Spec names one
// (changed reports which of SweepFields the command line set, which a
// sweep refuses), else from the fields, normalised. An inconsistent Spec is
// ErrBadSetup; an unreadable or malformed sweep file ErrBadSweep.
func (s *Spec) Experiment(changed func(flag string) bool) (*Experiment, error) {
	if s.Sweep != "" {
		for _, f := range SweepFields {
			if changed(f) {
				return nil, badSetup(fmt.Errorf("--%s cannot be combined with --sweep: the sweep file says it", f))
			}
		}
		abs, err := filepath.Abs(s.Sweep)
		if err != nil {
			return nil, badSetup(err)
		}
		s.Sweep = abs
		e, err := ParseSweep(abs)
		if err != nil {
			return nil, err
		}
		if s.Out != "" {
			if e.Out, err = filepath.Abs(s.Out); err != nil {
				return nil, badSetup(err)
			}
		}
		return e, nil
	}
	if s.Cell >= 0 || s.EmitArray {
		return nil, badSetup(errors.New("--cell and --emit-array need --sweep"))
	}
	if len(s.Traces) == 0 || len(s.Policies) == 0 || s.Out == "" {
		return nil, badSetup(errors.New("need --trace, --policies and --out (or --sweep FILE)"))
	}
	from, err := parseSpecTime("from", s.From)
	if err != nil {
		return nil, err
	}
	until, err := parseSpecTime("until", s.Until)
	if err != nil {
		return nil, err
	}
	e := &Experiment{
		Title: s.Title, Traces: s.Traces, Format: s.Format, SkipBad: s.SkipBad, Policies: s.Policies, LoadScales: s.LoadScales, Protocol: s.Protocol,
		From: from, Until: until, Nodes: s.Nodes, Limit: s.Limit, Warmup: s.Warmup, Interval: s.Interval, Cycle: s.Cycle,
		Horizon: s.Horizon, HandOff: s.HandOff, Work: s.Work, Restart: s.Restart, Checkpoint: s.Checkpoint, NoHandOff: s.NoHandOff, Workload: s.Workload, Preset: s.Preset, SlurmConf: s.SlurmConf, Seed: s.Seed, Models: s.Models, Out: s.Out,
	}
	if err := e.Normalize(); err != nil {
		return nil, badSetup(err)
	}
	return e, nil
}

// parseSpecTime reads --flag's value as every command does
// (traces.ParseMoment): RFC 3339, or a date or time in the trace's zone.
func parseSpecTime(flag, s string) (traces.Moment, error) {
	m, err := traces.ParseMoment(s)
	if err != nil {
		return m, badSetup(fmt.Errorf("--%s %w", flag, err))
	}
	return m, nil
}
