package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// Experiment is a whole evaluation: traces × load scales × policies under
// one protocol. A sweep file holds one (ParseSweep); `mirage eval` builds
// one from its flags. Its cells are independent and can run as job-array
// tasks; Merge joins their reports.
type Experiment struct {
	Title      string        `yaml:"title"`       // report title
	Traces     []string      `yaml:"traces"`      // trace files (any format mirage traces reads)
	Format     string        `yaml:"format"`      // trace format (default: sniffed)
	Policies   []string      `yaml:"policies"`    // policies in display order
	LoadScales []float64     `yaml:"load_scales"` // arrival scalings (default 1)
	Protocol   string        `yaml:"protocol"`    // "pair" or "chain-K" (default pair)
	From       time.Time     `yaml:"from"`        // evaluation window start (default: first submit)
	Until      time.Time     `yaml:"until"`       // evaluation window end (default: last submit)
	Nodes      []int         `yaml:"nodes"`       // segment sizes (default 1, 8)
	Limit      time.Duration `yaml:"limit"`       // per-segment limit (default 48h)
	Warmup     time.Duration `yaml:"warmup"`      // default 48h
	Interval   time.Duration `yaml:"interval"`    // default 4h
	Cycle      time.Duration `yaml:"cycle"`       // decision period (default 10m)
	Horizon    time.Duration `yaml:"horizon"`     // cut-off after K limits (default 7 days)
	Preset     string        `yaml:"preset"`      // simulated cluster preset (default ls6)
	SlurmConf  string        `yaml:"slurm_conf"`  // or a slurm.conf to read the cluster from (over the preset)
	Seed       uint64        `yaml:"seed"`        // seed of load scaling and of the bootstrap (default 1)
	Models     string        `yaml:"models"`      // directory of trained models (one sub-directory per policy)
	Bootstrap  Bootstrap     `yaml:"bootstrap"`   // confidence intervals
	Out        string        `yaml:"out"`         // output directory (cells/ and the merged report)
	Slurm      ArrayOptions  `yaml:"slurm"`       // job-array settings for --emit-array
}

// CellSpec is one cell: one trace at one load scale under one policy.
type CellSpec struct {
	Index     int     // position in Experiment.Cells (the array task id)
	Name      string  // unique name: CELL/POLICY
	Cell      string  // Sample.Cell: TRACE/xSCALE/PROTOCOL (shared by the policies of one trace and scale)
	Trace     string  // trace path
	Policy    string  // the cell's policy
	LoadScale float64 // arrival scaling
}

// Normalize fills defaults and validates; it is idempotent.
func (e *Experiment) Normalize() error {
	if len(e.Traces) == 0 {
		return fmt.Errorf("%w: no traces", ErrBadSetup)
	}
	if len(e.Policies) == 0 {
		return fmt.Errorf("%w: no policies", ErrBadSetup)
	}
	seen := map[string]bool{}
	for _, p := range e.Policies {
		if p == "" || seen[p] || strings.ContainsAny(p, "/ \t\n") {
			return fmt.Errorf("%w: policy names must be unique, non-empty, without '/' or spaces: %q", ErrBadSetup, p)
		}
		seen[p] = true
	}
	if len(e.LoadScales) == 0 {
		e.LoadScales = []float64{1}
	}
	for _, s := range e.LoadScales {
		if _, err := ScaleLoad(nil, s, 0, 0); err != nil {
			return fmt.Errorf("%w: load scale: %v", ErrBadSetup, err)
		}
	}
	if e.Protocol == "" {
		e.Protocol = "pair"
	}
	if _, ok := ParseChainProtocol(e.Protocol); !ok && e.Protocol != "pair" {
		return fmt.Errorf("%w: protocol %q: want pair or chain-K with K ≥ 2", ErrBadSetup, e.Protocol)
	}
	if len(e.Nodes) == 0 {
		e.Nodes = []int{1, 8}
	}
	for _, n := range e.Nodes {
		if n < 1 {
			return fmt.Errorf("%w: nodes per segment must be ≥ 1, got %d", ErrBadSetup, n)
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"limit", &e.Limit, DefaultLimit}, {"warmup", &e.Warmup, DefaultWarmup}, {"interval", &e.Interval, DefaultInterval},
		{"cycle", &e.Cycle, DefaultCycle}, {"horizon", &e.Horizon, DefaultHorizon}} {
		if *d.v < 0 {
			return fmt.Errorf("%w: %s must not be negative, got %s", ErrBadSetup, d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if !e.From.IsZero() && !e.Until.IsZero() && !e.From.Before(e.Until) {
		return fmt.Errorf("%w: from %s is not before until %s", ErrBadSetup, e.From.Format(time.RFC3339), e.Until.Format(time.RFC3339))
	}
	if e.Preset == "" {
		e.Preset = "ls6"
	}
	if e.Seed == 0 {
		e.Seed = 1
	}
	if e.Bootstrap.Seed == 0 {
		e.Bootstrap.Seed = e.Seed
	}
	if e.Bootstrap.Below == 0 {
		e.Bootstrap.Below = DefaultBootstrapBelow
	}
	if e.Bootstrap.Resamples <= 0 {
		e.Bootstrap.Resamples = DefaultResamples
	}
	if e.Bootstrap.Level <= 0 || e.Bootstrap.Level >= 1 {
		e.Bootstrap.Level = DefaultLevel
	}
	if e.Title == "" {
		e.Title = "mirage replay evaluation"
	}
	return nil
}

// traceLabel is a short, path-safe name of a trace file: its base name
// without extensions.
func traceLabel(path string) string {
	b := filepath.Base(path)
	if i := strings.IndexByte(b, '.'); i > 0 {
		b = b[:i]
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, b)
}

// Cells lists the experiment's cells in a fixed order (trace, load
// scale, policy): cell i is array task i.
func (e *Experiment) Cells() []CellSpec {
	labels := make([]string, len(e.Traces))
	count := map[string]int{}
	for i, t := range e.Traces {
		labels[i] = traceLabel(t)
		count[labels[i]]++
	}
	for i := range labels {
		if count[labels[i]] > 1 {
			labels[i] = fmt.Sprintf("t%d-%s", i+1, labels[i])
		}
	}
	var out []CellSpec
	for ti, t := range e.Traces {
		for _, s := range e.LoadScales {
			cell := fmt.Sprintf("%s/x%s/%s", labels[ti], strconv.FormatFloat(s, 'g', -1, 64), e.Protocol)
			for _, p := range e.Policies {
				out = append(out, CellSpec{Index: len(out), Name: cell + "/" + p, Cell: cell, Trace: t, Policy: p, LoadScale: s})
			}
		}
	}
	return out
}

// SimConfig builds the simulated cluster: the preset, then the slurm.conf if given.
func (e *Experiment) SimConfig() (sim.Config, error) {
	cfg, err := sim.Preset(e.Preset)
	if err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrBadSetup, err)
	}
	if e.SlurmConf != "" {
		fh, err := os.Open(e.SlurmConf)
		if err != nil {
			return cfg, fmt.Errorf("%w: %v", ErrBadSetup, err)
		}
		defer fh.Close()
		if cfg, err = sim.ParseSlurmConf(fh, cfg); err != nil {
			return cfg, fmt.Errorf("%w: %s: %v", ErrBadSetup, e.SlurmConf, err)
		}
	}
	if len(cfg.Nodes) == 0 {
		return cfg, fmt.Errorf("%w: the simulated cluster has no nodes (preset %q, slurm.conf %q)", ErrBadSetup, e.Preset, e.SlurmConf)
	}
	return cfg, nil
}

// Runtime is what a run needs beyond the experiment: the policy registry,
// the version and command line for provenance, progress, and caches shared
// by the cells of one process (traces read once, the reference policy run
// once per trace and load scale).
type Runtime struct {
	Version  string                               // mirage version for provenance
	Command  []string                             // command line for provenance
	Factory  provisioner.PolicyFactory            // policy registry; nil: provisioner.BaselinePolicy
	Workers  int                                  // parallel simulations per cell (0: GOMAXPROCS)
	Progress func(cell CellSpec, done, total int) // progress within a cell

	mu     sync.Mutex
	traces map[string]*loadedTrace
	refs   map[string][]Sample // reference samples by Sample.Cell
}

type loadedTrace struct {
	jobs []traces.Job
	ref  TraceRef
}

// ErrTrace wraps trace reading errors (malformed input).
var ErrTrace = errors.New("trace")

func (rt *Runtime) trace(path string, format string) (*loadedTrace, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if t, ok := rt.traces[path]; ok {
		return t, nil
	}
	ref, err := HashTrace(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrace, err)
	}
	r, err := traces.Open(path, traces.Options{Format: traces.Format(format)})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	defer r.Close()
	var jobs []traces.Job
	for j, err := range traces.All(r) {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTrace, err)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%w: %s: no jobs", ErrTrace, path)
	}
	ref.Jobs = len(jobs)
	t := &loadedTrace{jobs: jobs, ref: ref}
	if rt.traces == nil {
		rt.traces = map[string]*loadedTrace{}
	}
	rt.traces[path] = t
	return t, nil
}

// window resolves the evaluation window on the unscaled trace, so every
// load scale of a trace injects at the same times.
func (e *Experiment) window(jobs []traces.Job) (from, until time.Time) {
	from, until = e.From, e.Until
	var first, last time.Time
	for i := range jobs {
		s := jobs[i].Submit
		if s.IsZero() {
			continue
		}
		if first.IsZero() || s.Before(first) {
			first = s
		}
		if s.After(last) {
			last = s
		}
	}
	if from.IsZero() {
		from = first
	}
	if until.IsZero() {
		until = last
	}
	return from.UTC(), until.UTC()
}

// RunCell runs one cell: the trace scaled to the cell's load, the cell's
// policy and the reference policy (reactive, for the load classes; reused
// from an earlier cell of the same trace and scale in this process) under
// the experiment's protocol. It returns the cell's report.
func RunCell(ctx context.Context, e *Experiment, c CellSpec, rt *Runtime) (*Report, error) {
	if err := e.Normalize(); err != nil {
		return nil, err
	}
	tr, err := rt.trace(c.Trace, e.Format)
	if err != nil {
		return nil, err
	}
	cfg, err := e.SimConfig()
	if err != nil {
		return nil, err
	}
	scaled, err := ScaleLoad(tr.jobs, c.LoadScale, e.Seed, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSetup, err)
	}
	from, until := e.window(tr.jobs)
	rt.mu.Lock()
	ref, haveRef := rt.refs[c.Cell]
	rt.mu.Unlock()
	haveRef = haveRef && c.Policy != Reference
	run := []string{c.Policy}
	if c.Policy != Reference && !haveRef {
		run = append(run, Reference)
	}
	params := map[string]string{
		"preset": e.Preset, "warmup": e.Warmup.String(), "interval": e.Interval.String(), "limit": e.Limit.String(),
		"cycle": e.Cycle.String(), "nodes": joinInts(e.Nodes),
	}
	if e.SlurmConf != "" {
		params["slurm_conf"] = e.SlurmConf
	}
	var samples []Sample
	switch k, isChain := ParseChainProtocol(e.Protocol); {
	case isChain:
		setup := ChainSetup{
			Jobs: scaled, Sim: cfg, Cell: c.Cell, LoadScale: c.LoadScale, K: k, From: from, Until: until,
			Warmup: e.Warmup, Interval: e.Interval, Limit: e.Limit, Nodes: e.Nodes, Cycle: e.Cycle, Horizon: e.Horizon,
			Policies: run, Factory: rt.Factory, Workers: rt.Workers,
		}
		if rt.Progress != nil {
			setup.Progress = func(done, total int) { rt.Progress(c, done, total) }
		}
		var unmeasured map[string]int
		samples, unmeasured, err = RunChains(ctx, setup)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.Name, err)
		}
		params["horizon"] = e.Horizon.String()
		params["injections"] = strconv.Itoa(len(setup.Injections()))
		params["unmeasured"] = strconv.Itoa(unmeasured[c.Policy])
	default:
		return nil, fmt.Errorf("%w: protocol %q is not available in this build (use chain-K)", ErrBadSetup, e.Protocol)
	}
	var refSamples, out []Sample
	for _, s := range samples {
		if s.Policy == Reference {
			refSamples = append(refSamples, s)
		}
	}
	if haveRef {
		refSamples = ref
	} else {
		rt.mu.Lock()
		if rt.refs == nil {
			rt.refs = map[string][]Sample{}
		}
		rt.refs[c.Cell] = refSamples
		rt.mu.Unlock()
	}
	for _, s := range samples {
		if s.Policy != Reference {
			out = append(out, s)
		}
	}
	out = append(out, refSamples...)
	ClassifyByReference(out)
	cellPolicies := []string{c.Policy}
	if c.Policy != Reference {
		cellPolicies = append(cellPolicies, Reference)
	}
	prov := Provenance{
		Mirage:  rt.Version,
		Command: rt.Command,
		Traces:  []TraceRef{tr.ref},
		Windows: []Window{{Name: "eval", From: from, Until: until}, {Name: "warm-up", From: from, Until: from.Add(e.Warmup)}},
		Cells: []CellInfo{{
			Name: c.Name, Cell: c.Cell, Trace: c.Trace, Protocol: e.Protocol, LoadScale: c.LoadScale, Policies: cellPolicies,
			Seeds: map[string]uint64{"load": e.Seed, "sim": cfg.Seed}, Params: params,
		}},
	}
	if m, err := e.modelRef(c.Policy); err != nil {
		return nil, err
	} else if m != nil {
		prov.Models = append(prov.Models, *m)
	}
	return NewReport(e.Title, e.Policies, prov, out, e.Bootstrap)
}

// modelRef reads MODELS/POLICY/meta.json when it exists.
func (e *Experiment) modelRef(policy string) (*ModelRef, error) {
	if e.Models == "" {
		return nil, nil
	}
	dir := filepath.Join(e.Models, policy)
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	m, err := ReadModelRef(policy, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSetup, err)
	}
	return &m, nil
}

// RunAll runs every cell in one process and merges their reports; the
// result equals the merge of the same cells run as job-array tasks.
func RunAll(ctx context.Context, e *Experiment, rt *Runtime, onCell func(c CellSpec, i, n int)) (*Report, error) {
	if err := e.Normalize(); err != nil {
		return nil, err
	}
	cells := e.Cells()
	reports := make([]*Report, 0, len(cells))
	for i, c := range cells {
		if onCell != nil {
			onCell(c, i, len(cells))
		}
		r, err := RunCell(ctx, e, c, rt)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
	}
	return Merge(e.Title, rt.Command, reports...)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
