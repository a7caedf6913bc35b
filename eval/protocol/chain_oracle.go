package protocol

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// chainProbe answers the oracle's questions about the task a worker is
// running: the gap if the successor were submitted after a delay, measured
// on a fork of the task's simulator in which nothing decides or hands off,
// against the predecessor's end as planned (its limit; under the run
// protocol the ledger's end, which may come sooner).
type chainProbe struct {
	f       *sim.Sim
	ledger  *workLedger // run protocol; nil otherwise
	cycle   time.Duration
	horizon time.Duration
	task    int // counts the tasks the worker has run (set with f)
	// The oracle asks about growing delays from one instant: a fork kept
	// at the last delay asked (cursor, of task cursorOf at the instant
	// asked at) serves the next without replaying the time between.
	cursor   *sim.Sim
	cursorOf int
	cursorAt time.Time
}

// at returns a fork of f advanced to t, from the cursor when it can.
func (p *chainProbe) at(from, t time.Time) *sim.Sim {
	if p.cursor == nil || p.cursorOf != p.task || !p.cursorAt.Equal(from) || p.cursor.Now().After(t) {
		p.cursor, p.cursorOf, p.cursorAt = p.f.Fork(), p.task, from
		p.cursor.OnStart(nil)
		p.cursor.OnTick(p.cycle, func(time.Time, provisioner.Cluster) {}) // keeps the clock going to the submission instant
	}
	p.cursor.Run(t)
	return p.cursor.Fork()
}

func (p *chainProbe) predecessor(obs *provisioner.Observation) (end time.Time, completes bool) {
	end = obs.Predecessor.Start.Add(obs.Predecessor.TimeLimit)
	if p.ledger != nil {
		for _, s := range p.ledger.segs {
			if s.job == obs.Predecessor.ID {
				return s.end, s.finishes
			}
		}
	}
	return end, false
}

func (p *chainProbe) probe(obs *provisioner.Observation, after time.Duration) (time.Duration, error) {
	if p.f == nil || obs.Predecessor == nil {
		return 0, errors.New("oracle probe outside a chain evaluation")
	}
	end, _ := p.predecessor(obs)
	g := p.at(obs.Now, obs.Now.Add(after))
	req := obs.Successor
	req.Comment = "" // not the chain's: nothing in the fork tracks it
	id, err := g.Submit(context.Background(), req)
	if err != nil {
		return 0, fmt.Errorf("probe: %w", err)
	}
	cut := end.Add(p.horizon)
	start, err := g.RunUntilStart(id, cut)
	if err != nil {
		return 0, fmt.Errorf("probe: %w", err)
	}
	if start.IsZero() {
		return cut.Sub(end), nil // not started by the cut-off: a lower bound
	}
	return start.Sub(end), nil
}

// workOracle is the oracle of the run protocol: it also knows when the
// predecessor completes the work, and then submits no successor.
type workOracle struct {
	provisioner.Policy
	probe *chainProbe
}

func (o workOracle) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	if obs.Predecessor != nil && obs.Predecessor.State == provisioner.StateRunning {
		if _, completes := o.probe.predecessor(obs); completes {
			return provisioner.Decision{Action: provisioner.Wait, Reason: "oracle: the predecessor completes the work: no successor"}, nil
		}
	}
	return o.Policy.Decide(obs)
}

// workerFactory is the policy factory of one worker: the setup's, with the
// oracle bound to the worker's probe when the setup has a ProbeFactory.
func (c *ChainSetup) workerFactory(probe *chainProbe) provisioner.PolicyFactory {
	if c.ProbeFactory == nil {
		return c.Factory
	}
	f := c.ProbeFactory(probe.probe)
	return func(name string) (provisioner.Policy, error) {
		p, err := f(name)
		if err != nil || name != models.PolicyOracle {
			return p, err
		}
		if o, ok := p.(*models.OraclePolicy); ok {
			o.OnTicks, o.Interval = true, c.Cycle // the daemon's cycle decides only on its ticks
		}
		if c.Work <= 0 {
			return p, nil
		}
		return workOracle{Policy: p, probe: probe}, nil
	}
}
