package dataset

import (
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
)

// ChainEpisode is one injected chain of a ChainData set: the features at
// every decision instant and the outcome of submitting the successor at
// that instant, measured in a fork of the simulator. Because waiting does
// not change the simulated cluster, the episode is an exact table of the
// environment a policy faces: any policy's outcome on this chain is the
// outcome at the first tick it submits (or Reactive when it never does).
type ChainEpisode struct {
	Inject           time.Time     // injection time
	Scale            float64       // arrival scaling of the scenario (1: as recorded)
	Nodes            int           // chain size
	GPUs             int           // GPUs per segment
	PredStart        time.Time     // predecessor start
	PredEnd          time.Time     // predecessor end
	First            time.Time     // first decision instant (ChainRun.First)
	Tick             time.Duration // decision interval: tick k is First + k·Tick
	X                [][]float64   // features at tick k
	Gap              []float64     // seconds: gap if the successor is submitted at tick k
	Censored         []bool        // the successor submitted at tick k had not started by the horizon
	Reactive         float64       // seconds: gap of the forced submission at the deadline (the reactive baseline)
	ReactiveCensored bool          // the reactive successor was censored
}

// TickTime is the decision instant of tick k.
func (e *ChainEpisode) TickTime(k int) time.Time {
	first := e.First
	if first.IsZero() {
		first = e.PredStart
	}
	return first.Add(time.Duration(k) * e.Tick)
}

// KnownBy is the instant by which every outcome of the episode is known:
// the latest start (or censoring) of any probed successor, never before
// the predecessor's end. A model fitted at time t may learn only from
// episodes known by t: a chain whose predecessor has ended but whose
// deadline successor is still queued has an outcome that depends on what
// happens after t.
func (e *ChainEpisode) KnownBy() time.Time {
	last := math.Max(e.Reactive, 0)
	for _, g := range e.Gap {
		last = math.Max(last, g)
	}
	return e.PredEnd.Add(time.Duration(last * float64(time.Second)))
}

// Left is the predecessor's remaining time at tick k, in seconds.
func (e *ChainEpisode) Left(k int) float64 { return e.PredEnd.Sub(e.TickTime(k)).Seconds() }

// Outcome is the gap (seconds) when the successor is submitted at tick k,
// or at the deadline when k < 0 or k ≥ the number of ticks.
func (e *ChainEpisode) Outcome(k int) (gap float64, censored bool) {
	if k < 0 || k >= len(e.Gap) {
		return e.Reactive, e.ReactiveCensored
	}
	return e.Gap[k], e.Censored[k]
}

// ChainData is a dataset of injected chains from one scenario and window.
type ChainData struct {
	Schema   features.SchemaID // feature schema of X
	Trace    string            // scenario name
	Protocol scenario.Protocol // protocol (defaults filled)
	From     time.Time         // first injection ≥ From
	Until    time.Time         // injections < Until
	Seed     uint64            // simulator seed
	Episodes []ChainEpisode    // in injection order, then size order
	Skipped  int               // injections whose predecessor never started
	Dropped  int               // episodes whose predecessor ended after GenOptions.EndBy
	Probes   int               // successor submissions simulated
	Seconds  float64           // wall time of the generation

	// DependsOn is the instant before which the trace's jobs determine
	// every episode (the latest successor start, or censoring horizon, of
	// any probe); SpecsDigest is SpecsDigestBefore(DependsOn) of the
	// scenario it was generated from. Set by ChainDataCache.
	DependsOn   time.Time
	SpecsDigest string
}

// GenOptions control GenerateChainData.
type GenOptions struct {
	Protocol scenario.Protocol           // protocol (zero fields: defaults)
	From     time.Time                   // first injection not before (zero: first start + warm-up)
	Until    time.Time                   // injections before (zero: the last submit)
	EndBy    time.Time                   // keep only episodes whose predecessor ends by then, so every decision precedes it (zero: no limit)
	Workers  int                         // goroutines, one simulator fork each (0: all cores)
	Progress func(done, total int)       // called after each injection (from worker goroutines, serialised)
	Log      func(msg string, kv ...any) // optional structured log of skipped injections
}

// ErrNoInjections: a window holds no injection point.
var ErrNoInjections = errors.New("no injection points")

// GenerateChainData injects chains into the scenario at every injection
// time of the window and, for each, probes submitting the successor at
// every decision tick and at the deadline. The base replay runs once on the
// calling goroutine; each injection is worked by one of Workers goroutines
// on its own fork, and results are stored by injection index, so the
// dataset is the same for any number of workers.
func GenerateChainData(ctx context.Context, sc *scenario.Scenario, o GenOptions) (*ChainData, error) {
	p := o.Protocol.WithDefaults(sc.Config)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	points := p.Injections(sc, o.From, o.Until)
	if len(points) == 0 {
		return nil, fmt.Errorf("chain dataset: %w in [%s, %s) of %s (first start %s, warm-up %s, last submit %s)",
			ErrNoInjections, fmtTime(o.From), fmtTime(o.Until), sc.Name, fmtTime(sc.First), p.WarmUp, fmtTime(sc.Last))
	}
	start := time.Now() // wall time, reported only
	base, err := sc.NewSim()
	if err != nil {
		return nil, err
	}
	type result struct {
		eps     []ChainEpisode
		skipped int
		dropped int
		probes  int
	}
	results := make([]result, len(points))
	err = scenario.Forks(ctx, base, points, o.Workers, o.Progress, func() scenario.ForkWork {
		return func(ctx context.Context, i int, fork *sim.Sim) error {
			r := &results[i]
			for _, n := range p.Nodes {
				if err := ctx.Err(); err != nil {
					return err
				}
				ep, probes, err := chainEpisode(fork, p, points[i], n)
				ep.Scale = sc.Scale
				r.probes += probes
				if errors.Is(err, scenario.ErrNeverStarted) {
					r.skipped++
					if o.Log != nil {
						o.Log("skipped injection", "inject", points[i], "nodes", n, "reason", err.Error())
					}
					continue
				}
				if err != nil {
					return err
				}
				if !o.EndBy.IsZero() && ep.PredEnd.After(o.EndBy) {
					r.dropped++
					continue
				}
				r.eps = append(r.eps, ep)
			}
			return nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("chain dataset: %w", err)
	}
	out := &ChainData{Schema: features.Schema(), Trace: sc.Name, Protocol: p, From: points[0], Until: o.Until, Seed: sc.Config.Seed}
	if out.Until.IsZero() {
		out.Until = sc.Last
	}
	for i := range results {
		out.Episodes = append(out.Episodes, results[i].eps...)
		out.Skipped += results[i].skipped
		out.Dropped += results[i].dropped
		out.Probes += results[i].probes
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// chainEpisode injects one chain into a fork of base and probes every tick.
func chainEpisode(base *sim.Sim, p scenario.Protocol, inject time.Time, nodes int) (ChainEpisode, int, error) {
	c, err := scenario.StartChain(base, p, inject, nodes, scenario.ChainID(inject, nodes))
	if err != nil {
		return ChainEpisode{}, 0, err
	}
	n := c.Ticks()
	ep := ChainEpisode{Inject: inject, Scale: 1, Nodes: nodes, GPUs: c.Chain.GPUs, PredStart: c.PredStart, PredEnd: c.PredEnd, First: c.First, Tick: p.Tick,
		X: make([][]float64, n), Gap: make([]float64, n), Censored: make([]bool, n)}
	probes := 0
	for k := 0; k < n; k++ {
		obs, err := c.Observe(c.TickTime(k))
		if err != nil {
			return ep, probes, err
		}
		if ep.X[k], err = features.Features(obs); err != nil {
			return ep, probes, err
		}
		out, err := c.Probe()
		probes++
		if err != nil {
			return ep, probes, err
		}
		ep.Gap[k], ep.Censored[k] = out.Gap.Seconds(), out.Censored
	}
	c.Advance(c.Deadline())
	out, err := c.SubmitSuccessor(nil)
	probes++
	if err != nil {
		return ep, probes, err
	}
	ep.Reactive, ep.ReactiveCensored = out.Gap.Seconds(), out.Censored
	return ep, probes, nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// chainDataMagic starts a saved ChainData file (after gzip).
const chainDataMagic = "mirage-chaindata-v2"

// WriteChainData writes d as gzip-compressed gob.
func WriteChainData(w io.Writer, d *ChainData) error {
	zw := gzip.NewWriter(w)
	enc := gob.NewEncoder(zw)
	if err := enc.Encode(chainDataMagic); err != nil {
		return err
	}
	if err := enc.Encode(d); err != nil {
		return err
	}
	return zw.Close()
}

// ReadChainData reads a file written by WriteChainData.
func ReadChainData(r io.Reader) (*ChainData, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("chain dataset: %w: %v", models.ErrBadModel, err)
	}
	dec := gob.NewDecoder(zr)
	var magic string
	if err := dec.Decode(&magic); err != nil || magic != chainDataMagic {
		return nil, fmt.Errorf("chain dataset: %w: not a mirage chain dataset", models.ErrBadModel)
	}
	var d ChainData
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("chain dataset: %w: %v", models.ErrBadModel, err)
	}
	return &d, nil
}

// SaveChainData writes d to path atomically (0600: it may hold account
// names from a site trace), through a fresh temporary file (safefile).
func SaveChainData(path string, d *ChainData) error {
	if err := safefile.WriteFile(path, 0o600, func(w io.Writer) error { return WriteChainData(w, d) }); err != nil {
		return fmt.Errorf("save chain dataset %s: %w", path, err)
	}
	return nil
}

// LoadChainData reads a dataset saved by SaveChainData: only a file the
// user owns and nobody else can write (safefile.OpenOwned: the gob decoder
// is not fed what another user planted in a shared cache) carrying the
// format's magic; gzip's CRC-32 checks the contents.
func LoadChainData(path string) (*ChainData, error) {
	f, err := safefile.OpenOwned(path)
	if err != nil {
		return nil, fmt.Errorf("load chain dataset: %w", err)
	}
	defer f.Close()
	d, err := ReadChainData(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}
