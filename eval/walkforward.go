package eval

import (
	"context"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/provisioner"
)

// WalkForwardBaselines is the replay a walk-forward scores its baselines
// with (train.WFSpec.Replay): the pair protocol on the walk-forward's own
// scenario and protocol, so every baseline plays the chains the tables
// hold, decided through the provisioner's engine as in the daemon. The
// baselines need no model, so nothing they do depends on a fold's
// training data.
func WalkForwardBaselines(ctx context.Context, sc *scenario.Scenario, p scenario.Protocol, from, until time.Time, policies []string, workers int, progress func(done, total int)) ([]train.WFOutcome, error) {
	tick := p.WithDefaults(sc.Config).Tick
	samples, err := RunPairs(ctx, PairConfig{Scenario: sc, Protocol: p, From: from, Until: until, Policies: policies, Workers: workers, Progress: progress,
		Factory: func(probe models.OracleProbe) provisioner.PolicyFactory {
			return models.PolicyFactory("", models.PolicyOptions{Probe: probe, Tick: tick})
		}})
	if err != nil {
		return nil, err
	}
	out := make([]train.WFOutcome, 0, len(samples))
	for _, s := range samples {
		out = append(out, train.WFOutcome{Policy: s.Policy, Inject: s.Inject, Nodes: s.Nodes, GPUs: s.GPUs, Tick: -2, Gap: s.Gap.Seconds(), Censored: s.Censored})
	}
	return out, nil
}
