package eval

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"github.com/mirage-gpu/mirage/eval/report"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// Experiment is a whole evaluation: traces × load scales × policies under
// one protocol. A sweep file holds one (ParseSweep); `mirage eval` builds
// one from its flags. Its cells are independent and can run as job-array
// tasks; Merge joins their reports.
type Experiment struct {
	Title      string           `yaml:"title"`       // report title
	Traces     []string         `yaml:"traces"`      // trace files (any format mirage traces reads)
	Format     string           `yaml:"format"`      // trace format (default: sniffed)
	SkipBad    bool             `yaml:"skip_bad"`    // skip malformed trace rows (counted in the report's provenance) instead of failing
	Policies   []string         `yaml:"policies"`    // policies in display order
	LoadScales []float64        `yaml:"load_scales"` // arrival scalings (default 1)
	Protocol   string           `yaml:"protocol"`    // "pair" or "chain-K" (default pair)
	From       traces.Moment    `yaml:"from"`        // evaluation window start (default and earliest: first recorded start + warm-up); without an offset, in the trace's zone
	Until      traces.Moment    `yaml:"until"`       // evaluation window end (default: last submit); without an offset, in the trace's zone
	Nodes      []int            `yaml:"nodes"`       // segment sizes (default 1, 8)
	Limit      time.Duration    `yaml:"limit"`       // per-segment limit (default 48h)
	Warmup     time.Duration    `yaml:"warmup"`      // after the trace's first recorded start (default 48h)
	Interval   time.Duration    `yaml:"interval"`    // default 4h
	Cycle      time.Duration    `yaml:"cycle"`       // decision period (default 10m)
	Horizon    time.Duration    `yaml:"horizon"`     // successors not started this long after the predecessor's end (pair) or K limits (chain-K) are censored (default 7 days)
	HandOff    time.Duration    `yaml:"handoff"`     // chain-K: a successor that starts while its predecessor runs makes it checkpoint and exit this long after (mirage handoff); 0: off, every segment runs to its end
	Work       time.Duration    `yaml:"work"`        // run protocol: useful work per chain (default 7 days)
	Restart    time.Duration    `yaml:"restart"`     // run protocol: restart time R of every segment (default 5m)
	Checkpoint time.Duration    `yaml:"checkpoint"`  // run protocol: checkpoint time C, at the limit and on a hand-off (default 5m)
	NoHandOff  bool             `yaml:"no_handoff"`  // run protocol: successors do not hand off (an early start holds GPUs idle)
	Workload   string           `yaml:"workload"`    // whose cost the oracle plans for and learned policies decide with: training, service or "" (the published symmetric cost); the run protocol's default is training
	Preset     string           `yaml:"preset"`      // simulated cluster preset (default ls6)
	SlurmConf  string           `yaml:"slurm_conf"`  // or a slurm.conf to read the cluster from (over the preset)
	Seed       uint64           `yaml:"seed"`        // seed of load scaling and of the bootstrap (default 1)
	Models     string           `yaml:"models"`      // directory of trained models (one sub-directory per policy)
	Bootstrap  report.Bootstrap `yaml:"bootstrap"`   // confidence intervals
	Out        string           `yaml:"out"`         // output directory (cells/ and the merged report)
	Slurm      ArrayOptions     `yaml:"slurm"`       // job-array settings for --emit-array
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
		return fmt.Errorf("%w: no traces", protocol.ErrBadSetup)
	}
	if len(e.Policies) == 0 {
		return fmt.Errorf("%w: no policies", protocol.ErrBadSetup)
	}
	seen := map[string]bool{}
	for _, p := range e.Policies {
		if p == "" || seen[p] || strings.ContainsAny(p, "/ \t\n") {
			return fmt.Errorf("%w: policy names must be unique, non-empty, without '/' or spaces: %q", protocol.ErrBadSetup, p)
		}
		seen[p] = true
	}
	if len(e.LoadScales) == 0 {
		e.LoadScales = []float64{1}
	}
	for _, s := range e.LoadScales {
		if _, err := protocol.ScaleLoad(nil, s, 0, 0); err != nil {
			return fmt.Errorf("%w: load scale: %v", protocol.ErrBadSetup, err)
		}
	}
	if e.Protocol == "" {
		e.Protocol = metrics.ProtocolPair
	}
	if _, ok := metrics.ParseChainProtocol(e.Protocol); !ok && e.Protocol != metrics.ProtocolPair && e.Protocol != metrics.ProtocolRun {
		return fmt.Errorf("%w: protocol %q: want pair, run or chain-K with K ≥ 2", protocol.ErrBadSetup, e.Protocol)
	}
	if e.Protocol == metrics.ProtocolRun {
		if e.Workload == "" {
			e.Workload = provisioner.WorkloadTraining
		}
		if e.Work == 0 {
			e.Work = protocol.DefaultWork
		}
		if e.Restart == 0 {
			e.Restart = protocol.DefaultRestart
		}
		if e.Checkpoint == 0 {
			e.Checkpoint = protocol.DefaultCheckpoint
		}
	}
	if (e.Work != 0 || e.Restart != 0 || e.Checkpoint != 0 || e.NoHandOff) && e.Protocol != metrics.ProtocolRun ||
		e.Work < 0 || e.Restart < 0 || e.Checkpoint < 0 {
		return fmt.Errorf("%w: work, restart, checkpoint and no_handoff belong to the run protocol and must not be negative", protocol.ErrBadSetup)
	}
	if _, isChain := metrics.ParseChainProtocol(e.Protocol); e.HandOff < 0 || e.HandOff > 0 && !isChain {
		return fmt.Errorf("%w: handoff %s: want a non-negative duration, with a chain-K protocol", protocol.ErrBadSetup, e.HandOff)
	}
	if _, err := provisioner.WorkloadCost(e.Workload); err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrBadSetup, err)
	}
	if e.Workload != "" && e.Protocol == metrics.ProtocolPair {
		return fmt.Errorf("%w: workload %s: the pair protocol is the published setting (symmetric cost); use chain-K or run", protocol.ErrBadSetup, e.Workload)
	}
	if len(e.Nodes) == 0 {
		e.Nodes = []int{1, 8}
	}
	for _, n := range e.Nodes {
		if n < 1 {
			return fmt.Errorf("%w: nodes per segment must be ≥ 1, got %d", protocol.ErrBadSetup, n)
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"limit", &e.Limit, protocol.DefaultLimit}, {"warmup", &e.Warmup, protocol.DefaultWarmup}, {"interval", &e.Interval, protocol.DefaultInterval},
		{"cycle", &e.Cycle, protocol.DefaultCycle}, {"horizon", &e.Horizon, protocol.DefaultHorizon}} {
		if *d.v < 0 {
			return fmt.Errorf("%w: %s must not be negative, got %s", protocol.ErrBadSetup, d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	// Both read in one zone (any: the trace's zone shifts both alike, unless
	// only one of them carries an offset, checked per trace in window).
	if !e.From.IsZero() && !e.Until.IsZero() && !e.From.In(time.UTC).Before(e.Until.In(time.UTC)) {
		return fmt.Errorf("%w: from %s is not before until %s", protocol.ErrBadSetup, e.From, e.Until)
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
		e.Bootstrap.Below = metrics.DefaultBootstrapBelow
	}
	if e.Bootstrap.Resamples <= 0 {
		e.Bootstrap.Resamples = metrics.DefaultResamples
	}
	if e.Bootstrap.Level <= 0 || e.Bootstrap.Level >= 1 {
		e.Bootstrap.Level = metrics.DefaultLevel
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
		return cfg, fmt.Errorf("%w: %v", protocol.ErrBadSetup, err)
	}
	if e.SlurmConf != "" {
		fh, err := os.Open(e.SlurmConf)
		if err != nil {
			return cfg, fmt.Errorf("%w: %v", protocol.ErrBadSetup, err)
		}
		defer fh.Close()
		if cfg, err = sim.ParseSlurmConf(fh, cfg); err != nil {
			return cfg, fmt.Errorf("%w: %s: %v", protocol.ErrBadSetup, e.SlurmConf, err)
		}
	}
	if len(cfg.Nodes) == 0 {
		return cfg, fmt.Errorf("%w: the simulated cluster has no nodes (preset %q, slurm.conf %q)", protocol.ErrBadSetup, e.Preset, e.SlurmConf)
	}
	return cfg, nil
}

// Runtime is what a run needs beyond the experiment: the version and
// command line for provenance, progress, and caches shared by the cells of
// one process (each trace read and prepared once, the reference policy run
// once per trace and load scale).
type Runtime struct {
	Version  string                               // mirage version for provenance
	Command  []string                             // command line for provenance
	Workers  int                                  // parallel simulations per cell (0: GOMAXPROCS)
	Progress func(cell CellSpec, done, total int) // progress within a cell
	// Policies builds the policy registry of one simulation worker; probe
	// answers the oracle's questions (pair protocol only; nil elsewhere).
	// Default: models.PolicyFactory over the experiment's models directory.
	Policies func(e *Experiment, probe models.OracleProbe) provisioner.PolicyFactory

	mu        sync.Mutex
	scenarios map[string]*loadedTrace
	refs      map[string][]metrics.Sample    // reference samples by Sample.Cell
	refRuns   map[string][]metrics.RunSample // and the reference's whole runs (run protocol)
}

type loadedTrace struct {
	sc  *scenario.Scenario
	ref metrics.TraceRef
	loc *time.Location // the trace's zone: --from and --until without an offset are read in it
}

// ErrTrace wraps trace reading errors (unreadable or malformed input).
var ErrTrace = errors.New("trace")

// scenario reads a trace once and prepares it for replay on the experiment's cluster.
func (rt *Runtime) scenario(e *Experiment, path string) (*loadedTrace, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if t, ok := rt.scenarios[path]; ok {
		return t, nil
	}
	cfg, err := e.SimConfig()
	if err != nil {
		return nil, err
	}
	ref, err := report.HashTrace(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrace, err)
	}
	jobs, skipped, err := traces.ReadFileSkipped(path, traces.Options{Format: traces.Format(e.Format), SkipBad: e.SkipBad})
	if errors.Is(err, traces.ErrMalformed) {
		return nil, fmt.Errorf("%w: %w (--skip-bad leaves malformed rows out, counting them in the report)", ErrTrace, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	ref.Jobs, ref.Skipped = len(jobs), skipped
	sc, err := scenario.NewScenario(traceLabel(path), jobs, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrace, err)
	}
	sc.Jobs = nil // only the replay specs are needed here
	t := &loadedTrace{sc: sc, ref: ref, loc: jobs[0].Submit.Location()}
	if rt.scenarios == nil {
		rt.scenarios = map[string]*loadedTrace{}
	}
	rt.scenarios[path] = t
	return t, nil
}

func (rt *Runtime) policies(e *Experiment, probe models.OracleProbe) provisioner.PolicyFactory {
	if rt.Policies != nil {
		return rt.Policies(e, probe)
	}
	opts := models.PolicyOptions{Probe: probe, Tick: e.Cycle}
	if e.Workload != "" { // else |gap|, the published oracle
		cost, _ := provisioner.WorkloadCost(e.Workload) // checked by Normalize
		opts.OracleCost = func(gap time.Duration) float64 { return cost.Cost(gap, 0) }
	}
	return models.PolicyFactory(e.Models, opts)
}

// window is the evaluation window of a prepared trace: injections in
// [from, until), from no earlier than the first recorded start + warm-up;
// From and Until without an offset are read in the trace's zone loc. An
// empty window is an ErrBadSetup that says where each end came from
// (EmptyWindow).
func (e *Experiment) window(sc *scenario.Scenario, loc *time.Location) (from, until time.Time, err error) {
	from, until = e.From.In(loc), e.Until.In(loc)
	if first := sc.First.Add(e.Warmup); from.Before(first) {
		from = first
	}
	if until.IsZero() {
		until = sc.Last
	}
	if !from.Before(until) {
		return from, until, protocol.EmptyWindow(e.From.In(loc), e.Until.In(loc), sc.First, e.Warmup, sc.Last)
	}
	return from.UTC(), until.UTC(), nil
}

// RunCell runs one cell: the trace scaled to the cell's load, the cell's
// policy and the reference policy (reactive, for the reduction; reused from
// an earlier cell of the same trace and scale in this process) under the
// experiment's protocol. It returns the cell's report.
func RunCell(ctx context.Context, e *Experiment, c CellSpec, rt *Runtime) (*report.Report, error) {
	if err := e.Normalize(); err != nil {
		return nil, err
	}
	tr, err := rt.scenario(e, c.Trace)
	if err != nil {
		return nil, err
	}
	scaled, err := protocol.ScaleScenario(tr.sc, c.LoadScale, e.Seed, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", protocol.ErrBadSetup, err)
	}
	from, until, err := e.window(tr.sc, tr.loc)
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	ref, haveRef := rt.refs[c.Cell]
	refRuns := rt.refRuns[c.Cell]
	rt.mu.Unlock()
	haveRef = haveRef && c.Policy != metrics.Reference
	run := []string{c.Policy}
	if c.Policy != metrics.Reference && !haveRef {
		run = append(run, metrics.Reference)
	}
	// Unknown names and missing models are setup errors, found before any
	// simulation (a missing or stale model is also models.ErrNoModel or
	// features.ErrSchemaMismatch: bad input).
	for _, p := range run {
		if _, err := rt.policies(e, nil)(p); err != nil && !errors.Is(err, models.ErrNoProbe) {
			return nil, fmt.Errorf("%w: %w", protocol.ErrBadSetup, err)
		}
	}
	params := map[string]string{
		"preset": e.Preset, "warmup": e.Warmup.String(), "interval": e.Interval.String(), "limit": e.Limit.String(),
		"cycle": e.Cycle.String(), "nodes": joinInts(e.Nodes), "horizon": e.Horizon.String(),
	}
	if e.SlurmConf != "" {
		params["slurm_conf"] = e.SlurmConf
	}
	if tr.sc.Oversized > 0 {
		params["oversized_jobs_dropped"] = strconv.Itoa(tr.sc.Oversized)
	}
	var progress func(done, total int)
	if rt.Progress != nil {
		progress = func(done, total int) { rt.Progress(c, done, total) }
	}
	played, err := e.protocol().Play(ctx, protocol.Cell{Scenario: scaled, Name: c.Cell, LoadScale: c.LoadScale, From: from, Until: until, Policies: run,
		Factory: func(probe models.OracleProbe) provisioner.PolicyFactory { return rt.policies(e, probe) }, Workers: rt.Workers, Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("cell %s: %w", c.Name, err)
	}
	samples, runs := played.Samples, played.Runs
	maps.Copy(params, played.Params)
	params["injections"] = strconv.Itoa(played.Injections)
	params["unmeasured"] = strconv.Itoa(played.Unmeasured[c.Policy])
	var refSamples, out []metrics.Sample
	for _, s := range samples {
		if s.Policy == metrics.Reference {
			refSamples = append(refSamples, s)
		} else {
			out = append(out, s)
		}
	}
	var ownRuns, refRunsHere []metrics.RunSample
	for _, r := range runs {
		if r.Policy == metrics.Reference {
			refRunsHere = append(refRunsHere, r)
		} else {
			ownRuns = append(ownRuns, r)
		}
	}
	if haveRef {
		refSamples, refRunsHere = ref, refRuns
	} else {
		rt.mu.Lock()
		if rt.refs == nil {
			rt.refs, rt.refRuns = map[string][]metrics.Sample{}, map[string][]metrics.RunSample{}
		}
		rt.refs[c.Cell], rt.refRuns[c.Cell] = refSamples, refRunsHere
		rt.mu.Unlock()
	}
	out = append(out, refSamples...)
	ownRuns = append(ownRuns, refRunsHere...)
	if e.Protocol != metrics.ProtocolPair {
		// chain-K and run: classes from the reactive policy's gap on the same
		// hand-off (the pair harness sets them from the published
		// 1-minute-early reactive submission itself).
		metrics.ClassifyByReference(out)
		metrics.ClassifyRuns(ownRuns, out)
		metrics.ClassifyRunSamples(out, ownRuns)
	}
	cellPolicies := []string{c.Policy}
	if c.Policy != metrics.Reference {
		cellPolicies = append(cellPolicies, metrics.Reference)
	}
	prov := metrics.Provenance{
		Mirage:  rt.Version,
		Command: rt.Command,
		Traces:  []metrics.TraceRef{tr.ref},
		Windows: []metrics.Window{{Name: "eval", From: from, Until: until}, {Name: "warm-up", From: tr.sc.First, Until: tr.sc.First.Add(e.Warmup)}},
		Cells: []metrics.CellInfo{{
			Name: c.Name, Cell: c.Cell, Trace: c.Trace, Protocol: e.Protocol, LoadScale: c.LoadScale, Policies: cellPolicies,
			Seeds: map[string]uint64{"load": e.Seed, "sim": scaled.Config.Seed}, Params: params,
		}},
	}
	if m, err := e.modelRef(c.Policy); err != nil {
		return nil, err
	} else if m != nil {
		prov.Models = append(prov.Models, *m)
	}
	return report.Assemble(e.Title, e.Policies, prov, out, ownRuns, e.Bootstrap, schedLatency(scaled.Config))
}

// protocol is the protocol the experiment's cells play (e.Protocol, with
// its settings).
func (e *Experiment) protocol() protocol.Protocol {
	if k, isChain := metrics.ParseChainProtocol(e.Protocol); isChain || e.Protocol == metrics.ProtocolRun {
		return protocol.Chains{Setup: protocol.ChainSetup{
			K: k, Warmup: e.Warmup, Interval: e.Interval, Limit: e.Limit, Nodes: e.Nodes, Cycle: e.Cycle, Horizon: e.Horizon, HandOff: e.HandOff,
			Work: e.Work, Restart: e.Restart, Checkpoint: e.Checkpoint, NoHandOff: e.NoHandOff, Workload: e.Workload,
		}}
	}
	return protocol.Pair{Protocol: scenario.Protocol{Every: e.Interval, WarmUp: e.Warmup, Tick: e.Cycle, Limit: e.Limit, Nodes: e.Nodes, Horizon: e.Horizon}}
}

// schedLatency is the longest the simulated scheduler takes from an event
// (a job's end) to the main pass that starts what it freed room for: a
// successor queued on those nodes starts that much after its predecessor
// ends whatever the policy did.
func schedLatency(cfg sim.Config) time.Duration {
	d := cfg.SchedLatency
	for _, l := range cfg.LatencyTable {
		d = max(d, l)
	}
	return d
}

// modelRef reads MODELS/POLICY/meta.json when it exists.
func (e *Experiment) modelRef(policy string) (*metrics.ModelRef, error) {
	if e.Models == "" {
		return nil, nil
	}
	dir := filepath.Join(e.Models, policy)
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	m, err := report.ReadModelRef(policy, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", protocol.ErrBadSetup, err)
	}
	return &m, nil
}

// RunAll runs every cell in one process and merges their reports; the
// result equals the merge of the same cells run as job-array tasks.
func RunAll(ctx context.Context, e *Experiment, rt *Runtime, onCell func(c CellSpec, i, n int)) (*report.Report, error) {
	if err := e.Normalize(); err != nil {
		return nil, err
	}
	cells := e.Cells()
	reports := make([]*report.Report, 0, len(cells))
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
	return report.Merge(e.Title, rt.Command, reports...)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
