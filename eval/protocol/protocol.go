package protocol

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
)

// Protocol is one way to play an experiment's cell: chains injected into
// a scenario's replay over a window, every policy deciding through the
// provisioner's engine, one Sample per hand-off. Pair (the published pair
// protocol) and Chains (chain-K, and whole runs when its setup has work)
// are the two; the walk-forward is not one: it fits policies period by
// period (models/train) and replays the rest through Pair
// (ReplayBaselines).
type Protocol interface {
	// Name is the protocol as its samples record it (metrics.ProtocolPair,
	// metrics.ChainProtocol(K), metrics.ProtocolRun).
	Name() string
	// Play plays the cell. Its errors match ErrBadSetup when the cell
	// cannot be played as set up.
	Play(ctx context.Context, c Cell) (*Played, error)
}

// Cell is what every protocol plays: a scenario, a window and policies.
type Cell struct {
	Scenario    *scenario.Scenario // the trace prepared for replay (already load-scaled) and the cluster
	Name        string             // Sample.Cell of the results
	LoadScale   float64            // recorded in the samples
	From, Until time.Time          // the evaluation window (zero: from the warm-up's end, to the trace's last submit)
	Policies    []string           // registry names, in report order
	// Factory builds one worker's policies; probe is bound to that
	// worker's chain under evaluation, so "oracle" can run.
	Factory  func(probe models.OracleProbe) provisioner.PolicyFactory
	Workers  int                   // parallel forks (0: all cores)
	Progress func(done, total int) // called after each injection or chain, from one goroutine
}

// Played is what a protocol measured on a cell.
type Played struct {
	Samples []metrics.Sample
	Runs    []metrics.RunSample // whole runs (the run protocol only)
	// Unmeasured counts, per policy, the hand-offs (pair) or chains
	// (chain-K, run) the protocol injected and could not measure.
	Unmeasured map[string]int
	Injections int               // injection instants in the window
	Params     map[string]string // the protocol's own settings, for the cell's provenance
}

// Pair is the published pair protocol (RunPairs) on Protocol's cadence.
type Pair struct{ Protocol scenario.Protocol }

// Name implements Protocol.
func (Pair) Name() string { return metrics.ProtocolPair }

// Play implements Protocol: an empty window is an ErrBadSetup that says
// why (EmptyWindow).
func (p Pair) Play(ctx context.Context, c Cell) (*Played, error) {
	proto := p.Protocol.WithDefaults(c.Scenario.Config)
	if err := proto.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSetup, err)
	}
	points := proto.Injections(c.Scenario, c.From, c.Until)
	if len(points) == 0 { // a scaled trace may start later
		return nil, EmptyWindow(c.From, c.Until, c.Scenario.First, proto.WarmUp, c.Scenario.Last)
	}
	samples, err := RunPairs(ctx, PairConfig{Scenario: c.Scenario, Protocol: proto, From: c.From, Until: c.Until, Policies: c.Policies,
		Cell: c.Name, Workers: c.Workers, Progress: c.Progress, Factory: c.Factory})
	if err != nil {
		return nil, err
	}
	measured := map[string]int{}
	for i := range samples {
		samples[i].LoadScale = c.LoadScale
		measured[samples[i].Policy]++
	}
	out := &Played{Samples: samples, Unmeasured: map[string]int{}, Injections: len(points), Params: map[string]string{"lead": proto.Lead.String()}}
	for _, pol := range c.Policies {
		out.Unmeasured[pol] = len(points)*len(proto.Nodes) - measured[pol]
	}
	return out, nil
}

// Chains is the chain-K protocol (RunChains) or, when Setup.Work > 0, the
// run protocol (RunWholeRuns). Setup's cell fields (Scenario, Cell,
// LoadScale, From, Until, Policies, Factory, ProbeFactory, Workers,
// Progress) are ignored: Play takes them from its Cell.
type Chains struct{ Setup ChainSetup }

// Name implements Protocol.
func (p Chains) Name() string { return p.Setup.protocol() }

// Play implements Protocol.
func (p Chains) Play(ctx context.Context, c Cell) (*Played, error) {
	s := p.Setup
	s.Scenario, s.Cell, s.LoadScale, s.From, s.Until, s.Policies = c.Scenario, c.Name, c.LoadScale, c.From, c.Until, c.Policies
	s.Factory, s.ProbeFactory, s.Workers, s.Progress = nil, c.Factory, c.Workers, c.Progress
	out := &Played{Params: map[string]string{}}
	var err error
	if s.Work > 0 {
		out.Samples, out.Runs, out.Unmeasured, err = RunWholeRuns(ctx, s)
	} else {
		out.Samples, out.Unmeasured, err = RunChains(ctx, s)
	}
	if err != nil {
		return nil, err
	}
	out.Injections = len(s.Injections())
	if s.HandOff > 0 {
		out.Params["handoff"] = s.HandOff.String()
	}
	if s.Work > 0 {
		out.Params["work"], out.Params["restart"], out.Params["checkpoint"] = s.Work.String(), s.Restart.String(), s.Checkpoint.String()
		out.Params["handoff"] = strconv.FormatBool(!s.NoHandOff)
	}
	if s.Workload != "" {
		out.Params["workload"] = s.Workload
	}
	return out, nil
}
