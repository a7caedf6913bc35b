package train

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/nn"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
)

// SimEnv is the chain-submission environment played live in the
// simulator (an nn.Env): an episode is one injected predecessor; every Tick of
// its run the agent sees the features of the observation (the same
// Observe as the daemon) and chooses wait or submit; submit ends the
// episode with reward −Cost(gap)/Scale once the successor has started;
// waiting past the last tick ends it with the forced (reactive)
// submission's reward. Injection points of the window are taken in order
// (the base replay only moves forward; after the last it restarts), the
// size is drawn from Protocol.Nodes, and with ExploringStart the episode
// begins at a uniform tick (a chain that waited until then is in exactly
// that state).
type SimEnv struct {
	Scenario       *scenario.Scenario // trace and cluster
	Protocol       scenario.Protocol  // protocol (defaults filled by NewSimEnv)
	Points         []time.Time
	Cost           scenario.GapCost // reward = −Cost/Scale
	Scale          float64          // reward divisor (default Cost.InterruptionPerHour: rewards in hours)
	ExploringStart bool             // start at a uniform tick
	// LastGap is the gap (seconds) of the last finished episode.
	LastGap float64

	rng  *rand.Rand
	base *sim.Sim
	next int
	run  *scenario.ChainRun
	k    int
	n    int
}

// NewSimEnv returns a live environment over the injection points of [from, until).
func NewSimEnv(sc *scenario.Scenario, p scenario.Protocol, from, until time.Time, cost scenario.GapCost, exploring bool, seed uint64) (*SimEnv, error) {
	p = p.WithDefaults(sc.Config)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	pts := p.Injections(sc, from, until)
	if len(pts) == 0 {
		return nil, errors.New("sim env: no injection points in the window")
	}
	scale := cost.InterruptionPerHour
	if scale <= 0 {
		scale = 1
	}
	return &SimEnv{Scenario: sc, Protocol: p, Points: pts, Cost: cost, Scale: scale, ExploringStart: exploring,
		rng: rand.New(rand.NewPCG(seed, 0x73696d656e76))}, nil
}

// Reset implements nn.Env.
func (e *SimEnv) Reset() ([]float64, error) {
	for tries := 0; tries < len(e.Points); tries++ {
		if e.base == nil || e.next >= len(e.Points) {
			b, err := e.Scenario.NewSim()
			if err != nil {
				return nil, err
			}
			e.base, e.next = b, 0
		}
		at := e.Points[e.next]
		e.next++
		e.base.Run(at)
		n := e.Protocol.Nodes[e.rng.IntN(len(e.Protocol.Nodes))]
		run, err := scenario.StartChain(e.base, e.Protocol, at, n, scenario.ChainID(at, n))
		if errors.Is(err, scenario.ErrNeverStarted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		e.run, e.n, e.k = run, run.Ticks(), 0
		if e.n == 0 {
			continue
		}
		if e.ExploringStart {
			e.k = e.rng.IntN(e.n)
		}
		return e.state()
	}
	return nil, errors.New("sim env: no injected predecessor started")
}

func (e *SimEnv) state() ([]float64, error) {
	obs, err := e.run.Observe(e.run.TickTime(e.k))
	if err != nil {
		return nil, err
	}
	return features.Features(obs)
}

// Step implements nn.Env.
func (e *SimEnv) Step(a int) ([]float64, float64, bool, error) {
	if e.run == nil {
		return nil, 0, true, errors.New("sim env: Step before Reset")
	}
	if a == nn.ActionWait {
		e.k++
		if e.k < e.n {
			s, err := e.state()
			return s, 0, false, err
		}
		e.run.Advance(e.run.Deadline())
	}
	out, err := e.run.SubmitSuccessor(nil)
	gpus := e.run.Chain.GPUs
	e.run = nil
	if err != nil {
		return nil, 0, true, fmt.Errorf("sim env: %w", err)
	}
	e.LastGap = out.Gap.Seconds()
	return nil, -e.Cost.Cost(out.Gap, gpus) / e.Scale, true, nil
}
