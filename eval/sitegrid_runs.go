package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// Whole runs under the site grid: the training workload's runs (the run
// protocol: Work of useful work, 48 h segments, hand-off on) of reactive
// and every grid candidate under one cell, the learned ones with
// xgb-online fitted for the training cost once per period on the chains
// known at its start (protocol.FitFolds, the walk-forward's tables). One
// cell, one file, as for the walk-forward.

// GridRunsResult is one cell's whole runs.
type GridRunsResult struct {
	Cell     string              `json:"cell"`
	Class    sim.SiteClass       `json:"class"`
	Interval time.Duration       `json:"interval_ns"` // between injections
	Runs     []metrics.RunSample `json:"runs"`
	Seconds  float64             `json:"seconds"`
	Stamp    string              `json:"stamp"`
}

// GridRunPolicies are the policies of a cell's whole runs: reactive (the
// load-class reference) and the grid candidates.
func GridRunPolicies() []string { return slices.Concat([]string{metrics.Reference}, GridCandidates()) }

// RunsStamp identifies a cell's whole runs under s and bounds (periods:
// their starts, then the end) with runs every interval: the cell's
// configuration, the trace's name, the seed, the periods, the interval
// and the policies (not the walk-forward's ranking or scored periods,
// which the whole runs do not use).
func (s GridSpec) RunsStamp(cell sim.GridCell, bounds []time.Time, interval time.Duration) (string, error) {
	return stamp(cell, func(h io.Writer) {
		fmt.Fprint(h, "runs", s.TraceName, s.Seed, interval, GridRunPolicies())
		for _, t := range bounds {
			fmt.Fprint(h, t.UTC())
		}
	})
}

// RunGridRuns replays whole training runs of 1 and 8 nodes injected every
// interval in each period of bounds under the cell's preset.
func RunGridRuns(ctx context.Context, s GridSpec, cell sim.GridCell, bounds []time.Time, interval time.Duration) (*GridRunsResult, error) {
	cfg, err := cell.Config()
	if err != nil {
		return nil, err
	}
	stamp, err := s.RunsStamp(cell, bounds, interval)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	training, _ := provisioner.WorkloadCost(provisioner.WorkloadTraining)
	spec := protocol.WFSpec{Jobs: s.Jobs, TraceName: s.TraceName, Cluster: cfg, Bounds: bounds, Seed: s.Seed, Cache: s.Cache, Workers: s.Workers}
	folds, err := protocol.FitFolds(ctx, spec, train.OnlinePolicyName, training)
	if err != nil {
		return nil, fmt.Errorf("grid cell %s: whole runs: %w", cell.Name, err)
	}
	sc, err := scenario.NewScenario(s.TraceName, s.Jobs, cfg)
	if err != nil {
		return nil, err
	}
	out := &GridRunsResult{Cell: cell.Name, Class: cell.Class, Interval: interval, Stamp: stamp}
	for i, f := range folds {
		factory := func(probe models.OracleProbe) provisioner.PolicyFactory {
			base := models.PolicyFactory("", models.PolicyOptions{Probe: probe, Tick: protocol.DefaultCycle})
			return func(name string) (provisioner.Policy, error) {
				if name != train.OnlinePolicyName && name != models.DefaultPinned {
					return base(name)
				}
				p, err := models.NewModelPolicy(name, f.Model)
				if err != nil {
					return nil, err
				}
				p.Guard = f.Guard
				if name == models.DefaultPinned {
					return provisioner.Pinned(name, p), nil
				}
				return p, nil
			}
		}
		workers := s.Workers
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		_, runs, _, err := protocol.RunWholeRuns(ctx, protocol.ChainSetup{Scenario: sc, Cell: fmt.Sprintf("%s/%d", cell.Name, i), LoadScale: 1, From: f.Start, Until: f.End,
			Interval: interval, Nodes: []int{1, 8}, Work: protocol.DefaultWork, Workload: provisioner.WorkloadTraining, Policies: GridRunPolicies(),
			ProbeFactory: factory, Workers: workers})
		if err != nil {
			return nil, fmt.Errorf("grid cell %s: whole runs: %w", cell.Name, err)
		}
		out.Runs = append(out.Runs, runs...)
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// GridRunsFile is where a cell's whole runs are kept in a grid directory.
func GridRunsFile(dir, cell string) string { return filepath.Join(dir, cell+".runs.json") }

// WriteGridRuns writes a cell's whole runs (atomically).
func WriteGridRuns(path string, r *GridRunsResult) error {
	return safefile.WriteFile(path, 0o644, func(w io.Writer) error { return json.NewEncoder(w).Encode(r) })
}

// ReadGridRuns reads a cell's whole runs written by WriteGridRuns.
func ReadGridRuns(path string) (*GridRunsResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r GridRunsResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("grid runs %s: %w", path, err)
	}
	return &r, nil
}

// WriteGridRunsTable writes, per cell, each policy's overhead against
// reactive's on the same runs (pooled, and in each load class), its
// GPU-hours charged against reactive's, and marks the cell's default.
func WriteGridRunsTable(w io.Writer, cells []*GridRunsResult, defaults map[string]string) error {
	if _, err := fmt.Fprintln(w, "| cell | class | policy | runs | overhead mean (h) | overhead × reactive | 95% CI | low | medium | heavy | GPU-h × reactive |\n|---|---|---|---|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	ratio := func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprintf("%.2f", *v)
	}
	for _, c := range cells {
		groups := metrics.ComputeRuns(c.Runs, metrics.Options{Policies: GridRunPolicies(), BootstrapBelow: 1 << 30, Seed: 1})
		for _, p := range GridRunPolicies() {
			g := findRunGroup(groups, p, metrics.AllClasses)
			if g == nil {
				continue
			}
			name := p
			if p == defaults[c.Cell] {
				name = "**" + p + "** (default)"
			}
			ci := "–"
			if g.CI != nil && g.CI.OverheadRatio != nil {
				ci = fmt.Sprintf("%.2f–%.2f", g.CI.OverheadRatio.Lo, g.CI.OverheadRatio.Hi)
			}
			line := fmt.Sprintf("| %s | %s | %s | %d | %.2f | %s | %s |", c.Cell, c.Class, name, g.N, g.OverheadMean, ratio(g.OverheadRatio), ci)
			for _, class := range []string{metrics.LoadLow, metrics.LoadMedium, metrics.LoadHeavy} {
				cg := findRunGroup(groups, p, class)
				if cg == nil {
					line += " – |"
					continue
				}
				line += " " + ratio(cg.OverheadRatio) + " |"
			}
			line += " " + fmt.Sprintf("%s |", ratio(g.ChargedRatio))
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// findRunGroup is policy p's run group over every size in class.
func findRunGroup(gs []metrics.RunStats, p, class string) *metrics.RunStats {
	for i := range gs {
		if gs[i].Policy == p && gs[i].Nodes == 0 && gs[i].LoadClass == class {
			return &gs[i]
		}
	}
	return nil
}
