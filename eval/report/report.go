package report

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Schema is the version of the report JSON layout.
const Schema = 1

// ErrBad is returned for report JSON that cannot be used (wrong
// schema, inconsistent cells).
var ErrBad = errors.New("bad report")

// Bootstrap records how confidence intervals were computed.
type Bootstrap struct {
	Below     int     `json:"below"`     // groups with fewer hand-offs get intervals
	Resamples int     `json:"resamples"` // resamples per interval
	Level     float64 `json:"level"`     // two-sided confidence level
	Seed      uint64  `json:"seed"`      // seed
}

// Report is a complete evaluation: provenance, the samples, and the metrics
// computed from them. Its JSON form round-trips, and Markdown and HTML are
// rendered from it alone.
type Report struct {
	Schema     int                `json:"schema"`
	Title      string             `json:"title"`
	Policies   []string           `json:"policies"` // display order
	Provenance metrics.Provenance `json:"provenance"`
	Bootstrap  Bootstrap          `json:"bootstrap"`
	// ZeroToleranceS is the gap, in seconds, that still counts as zero
	// interruption: the simulated scheduler's latency (SetZeroTolerance;
	// 0 in reports from before it, where only gap ≤ 0 counted).
	ZeroToleranceS float64              `json:"zero_tolerance_s,omitempty"`
	Groups         []metrics.GroupStats `json:"groups"`
	Samples        []metrics.Sample     `json:"samples"`
	// The run protocol's whole runs and their figures (SetRuns).
	RunGroups []metrics.RunStats  `json:"run_groups,omitempty"`
	Runs      []metrics.RunSample `json:"runs,omitempty"`
}

// SetRuns puts whole runs (the run protocol) in the report: copied, in
// canonical order (cell, protocol, scale, policy, size, chain) with times
// in UTC, checked for duplicates, and their figures computed with the
// report's bootstrap settings.
func (r *Report) SetRuns(runs []metrics.RunSample) error {
	out := make([]metrics.RunSample, 0, len(runs))
	type runOf struct {
		run    metrics.RunKey
		policy string
	}
	seen := map[runOf]int{}
	for _, x := range runs {
		x.Inject = x.Inject.UTC()
		k := runOf{metrics.RunKeyOf(&x), x.Policy}
		if i, ok := seen[k]; ok {
			if out[i] != x {
				return fmt.Errorf("%w: two different outcomes for policy %s, cell %s, run %s: the cells disagree; were they run with different seeds or versions?", ErrBad, x.Policy, x.Cell, x.ChainID)
			}
			continue // the reference policy's runs come from every cell
		}
		seen[k] = len(out)
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b metrics.RunSample) int {
		return cmp.Or(strings.Compare(a.Cell, b.Cell), strings.Compare(a.Protocol, b.Protocol), cmp.Compare(a.LoadScale, b.LoadScale),
			strings.Compare(a.Policy, b.Policy), cmp.Compare(a.Nodes, b.Nodes), strings.Compare(a.ChainID, b.ChainID))
	})
	r.Runs, r.RunGroups = nil, nil
	if len(out) > 0 {
		r.Runs = out
		r.RunGroups = metrics.ComputeRuns(out, r.metricsOptions())
	}
	return nil
}

// metricsOptions are the options the report's figures are computed with.
func (r *Report) metricsOptions() metrics.Options {
	b := r.Bootstrap
	return metrics.Options{Policies: r.Policies, BootstrapBelow: b.Below, Resamples: b.Resamples, Level: b.Level, Seed: b.Seed,
		ZeroTolerance: time.Duration(r.ZeroToleranceS * float64(time.Second))}
}

// ZeroTolerance is the gap that still counts as zero interruption.
func (r *Report) ZeroTolerance() time.Duration {
	return time.Duration(r.ZeroToleranceS * float64(time.Second))
}

// SetZeroTolerance sets the gap that still counts as zero interruption
// (whole seconds; the scheduler's latency) and recomputes the figures.
func (r *Report) SetZeroTolerance(d time.Duration) {
	r.ZeroToleranceS = zeroToleranceS(d)
	r.Groups = metrics.Compute(r.Samples, r.metricsOptions())
	if r.Groups == nil {
		r.Groups = []metrics.GroupStats{}
	}
	if len(r.Runs) > 0 {
		r.RunGroups = metrics.ComputeRuns(r.Runs, r.metricsOptions())
	}
}

// zeroToleranceS is the zero tolerance as recorded: whole seconds, ≥ 0.
func zeroToleranceS(d time.Duration) float64 { return max(d, 0).Round(time.Second).Seconds() }

// New computes the metrics of samples and assembles a report (no whole
// runs, no zero tolerance: Assemble with those). The samples are copied,
// put in canonical order (cell, protocol, scale, policy, size, chain,
// segment) with times in UTC, and checked for duplicates.
func New(title string, policies []string, prov metrics.Provenance, samples []metrics.Sample, b Bootstrap) (*Report, error) {
	return Assemble(title, policies, prov, samples, nil, b, 0)
}

// Assemble builds a report from everything its figures are computed from:
// the hand-off samples (canonicalised as New does), the whole runs
// (as SetRuns does), the bootstrap settings (zero fields get the defaults)
// and the zero tolerance (as SetZeroTolerance rounds it). Each figure is
// computed once, with the final settings.
func Assemble(title string, policies []string, prov metrics.Provenance, samples []metrics.Sample, runs []metrics.RunSample, b Bootstrap, zeroTolerance time.Duration) (*Report, error) {
	s, err := canonicalSamples(samples)
	if err != nil {
		return nil, err
	}
	if b.Below == 0 {
		b.Below = metrics.DefaultBootstrapBelow
	}
	if b.Resamples <= 0 {
		b.Resamples = metrics.DefaultResamples
	}
	if b.Level <= 0 || b.Level >= 1 {
		b.Level = metrics.DefaultLevel
	}
	r := &Report{Schema: Schema, Title: title, Policies: slices.Clone(policies), Provenance: canonicalProvenance(prov), Bootstrap: b, Samples: s,
		ZeroToleranceS: zeroToleranceS(zeroTolerance)}
	r.Groups = metrics.Compute(s, r.metricsOptions())
	if r.Groups == nil {
		r.Groups = []metrics.GroupStats{}
	}
	if err := r.SetRuns(runs); err != nil {
		return nil, err
	}
	return r, nil
}

// sampleKey identifies a sample: one policy on one hand-off.
type sampleKey struct {
	cell, protocol string
	scale          float64
	policy, chain  string
	nodes, segment int
}

func canonicalSamples(in []metrics.Sample) ([]metrics.Sample, error) {
	out := make([]metrics.Sample, 0, len(in))
	seen := map[sampleKey]int{}
	for _, s := range in {
		s.Inject = s.Inject.UTC()
		k := sampleKey{s.Cell, s.Protocol, s.LoadScale, s.Policy, s.ChainID, s.Nodes, s.Segment}
		if i, ok := seen[k]; ok {
			if out[i] != s {
				return nil, fmt.Errorf("%w: two different outcomes for policy %s, cell %s, chain %s, segment %d (gaps %v and %v): the cells disagree; were they run with different seeds or versions?",
					ErrBad, s.Policy, s.Cell, s.ChainID, s.Segment, out[i].Gap, s.Gap)
			}
			continue // the same hand-off from two cells (the reference policy runs in every cell)
		}
		seen[k] = len(out)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b metrics.Sample) int {
		return cmp.Or(
			strings.Compare(a.Cell, b.Cell), strings.Compare(a.Protocol, b.Protocol), cmp.Compare(a.LoadScale, b.LoadScale),
			strings.Compare(a.Policy, b.Policy), cmp.Compare(a.Nodes, b.Nodes), strings.Compare(a.ChainID, b.ChainID),
			cmp.Compare(a.Segment, b.Segment))
	})
	return out, nil
}

// canonicalProvenance sorts and de-duplicates the lists and puts times in UTC.
func canonicalProvenance(p metrics.Provenance) metrics.Provenance {
	p.Command = slices.Clone(p.Command)
	p.Traces = slices.Clone(p.Traces)
	slices.SortFunc(p.Traces, func(a, b metrics.TraceRef) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.SHA256, b.SHA256))
	})
	p.Traces = slices.CompactFunc(p.Traces, func(a, b metrics.TraceRef) bool { return a == b })
	p.Windows = slices.Clone(p.Windows)
	for i := range p.Windows {
		p.Windows[i].From, p.Windows[i].Until = p.Windows[i].From.UTC(), p.Windows[i].Until.UTC()
	}
	slices.SortFunc(p.Windows, func(a, b metrics.Window) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), a.From.Compare(b.From), a.Until.Compare(b.Until))
	})
	p.Windows = slices.CompactFunc(p.Windows, func(a, b metrics.Window) bool { return a == b })
	p.Models = slices.Clone(p.Models)
	slices.SortFunc(p.Models, func(a, b metrics.ModelRef) int {
		return cmp.Or(strings.Compare(a.Policy, b.Policy), strings.Compare(a.Dir, b.Dir))
	})
	p.Models = slices.CompactFunc(p.Models, func(a, b metrics.ModelRef) bool { return a.Policy == b.Policy && a.Dir == b.Dir })
	p.Cells = slices.Clone(p.Cells)
	slices.SortFunc(p.Cells, func(a, b metrics.CellInfo) int { return strings.Compare(a.Name, b.Name) })
	p.Cells = slices.CompactFunc(p.Cells, func(a, b metrics.CellInfo) bool { return a.Name == b.Name })
	if p.Traces == nil {
		p.Traces = []metrics.TraceRef{}
	}
	if p.Cells == nil {
		p.Cells = []metrics.CellInfo{}
	}
	return p
}

// Merge joins reports of cells (job-array tasks) into one: samples are
// concatenated (the reference policy's samples, run in every cell, are kept
// once; a hand-off with two different outcomes is an error), provenance
// lists are united, and the metrics are recomputed. All reports must share
// the schema, mirage version and bootstrap settings; title, policy order
// and command come from the first unless given.
func Merge(title string, command []string, reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("%w: nothing to merge", ErrBad)
	}
	first := reports[0]
	var samples []metrics.Sample
	var runs []metrics.RunSample
	prov := metrics.Provenance{Mirage: first.Provenance.Mirage, Command: command}
	var policies []string
	cellNames := map[string]int{}
	for i, r := range reports {
		if r.Schema != Schema {
			return nil, fmt.Errorf("%w: report %d has schema %d, want %d", ErrBad, i+1, r.Schema, Schema)
		}
		if r.Bootstrap != first.Bootstrap {
			return nil, fmt.Errorf("%w: report %d was computed with bootstrap %+v, report 1 with %+v", ErrBad, i+1, r.Bootstrap, first.Bootstrap)
		}
		if r.ZeroToleranceS != first.ZeroToleranceS {
			return nil, fmt.Errorf("%w: report %d counts gaps up to %gs as zero interruption, report 1 up to %gs: were their clusters' schedulers simulated alike?", ErrBad, i+1, r.ZeroToleranceS, first.ZeroToleranceS)
		}
		if r.Provenance.Mirage != first.Provenance.Mirage {
			return nil, fmt.Errorf("%w: report %d is from mirage %s, report 1 from %s", ErrBad, i+1, r.Provenance.Mirage, first.Provenance.Mirage)
		}
		for _, c := range r.Provenance.Cells {
			if j, ok := cellNames[c.Name]; ok && j != i {
				return nil, fmt.Errorf("%w: cell %q appears in reports %d and %d", ErrBad, c.Name, j+1, i+1)
			}
			cellNames[c.Name] = i
		}
		samples = append(samples, r.Samples...)
		runs = append(runs, r.Runs...)
		prov.Traces = append(prov.Traces, r.Provenance.Traces...)
		prov.Windows = append(prov.Windows, r.Provenance.Windows...)
		prov.Models = append(prov.Models, r.Provenance.Models...)
		prov.Cells = append(prov.Cells, r.Provenance.Cells...)
		for _, p := range r.Policies {
			if !slices.Contains(policies, p) {
				policies = append(policies, p)
			}
		}
	}
	if title == "" {
		title = first.Title
	}
	return Assemble(title, policies, prov, samples, runs, first.Bootstrap, first.ZeroTolerance())
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(r)
}

// Read decodes a report written by WriteJSON and checks its schema.
func Read(rd io.Reader, name string) (*Report, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (is it a report.json written by mirage eval?)", ErrBad, name, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%w: %s: schema %d, this mirage reads %d", ErrBad, name, r.Schema, Schema)
	}
	return &r, nil
}

// ReadFile reads a report JSON file.
func ReadFile(path string) (*Report, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return Read(fh, path)
}

// Report file names inside an output directory.
const (
	HTMLFile     = "report.html"
	MarkdownFile = "report.md"
	JSONFile     = "report.json"
)

// WriteFiles writes report.html, report.md and report.json into dir
// (created if needed), each atomically, and returns their paths.
func (r *Report) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var paths []string
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{JSONFile, r.WriteJSON}, {MarkdownFile, r.WriteMarkdown}, {HTMLFile, r.WriteHTML}} {
		p := filepath.Join(dir, f.name)
		if err := safefile.WriteFile(p, 0o644, f.write); err != nil {
			return paths, fmt.Errorf("report: %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// HashTrace returns a TraceRef for a file: its path and the SHA-256 of its bytes.
func HashTrace(path string) (metrics.TraceRef, error) {
	fh, err := os.Open(path)
	if err != nil {
		return metrics.TraceRef{}, err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return metrics.TraceRef{}, fmt.Errorf("hash %s: %w", path, err)
	}
	return metrics.TraceRef{Path: path, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ReadModelRef reads dir/meta.json for the report's provenance.
func ReadModelRef(policy, dir string) (metrics.ModelRef, error) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return metrics.ModelRef{}, fmt.Errorf("model of %s: %w", policy, err)
	}
	m := metrics.ModelRef{Policy: policy, Dir: dir}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m.Meta); err != nil {
		return metrics.ModelRef{}, fmt.Errorf("model of %s: %s: %w", policy, filepath.Join(dir, "meta.json"), err)
	}
	return m, nil
}

// experiments lists the (protocol, load scale) pairs of the groups in order.
func (r *Report) experiments() []metrics.GroupKey {
	var out []metrics.GroupKey
	add := func(k metrics.GroupKey) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, g := range r.Groups {
		add(metrics.GroupKey{Protocol: g.Protocol, LoadScale: g.LoadScale})
	}
	for _, g := range r.RunGroups { // whole runs without a hand-off (one segment did the work)
		add(metrics.GroupKey{Protocol: g.Protocol, LoadScale: g.LoadScale})
	}
	return out
}

// seedsSummary lists the seeds of the cells, as "name=value" sorted.
func (r *Report) seedsSummary() []string {
	set := map[string]bool{}
	for _, c := range r.Provenance.Cells {
		for k, v := range c.Seeds {
			set[fmt.Sprintf("%s=%d", k, v)] = true
		}
	}
	set[fmt.Sprintf("bootstrap=%d", r.Bootstrap.Seed)] = true
	return slices.Sorted(maps.Keys(set))
}
