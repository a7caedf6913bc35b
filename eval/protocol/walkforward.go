package protocol

import (
	"context"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
)

// ReplayBaselines is the replay a walk-forward scores its baselines with
// (train.WFSpec.Replay): the pair protocol on the walk-forward's own
// scenario and protocol, so every baseline plays the chains the tables
// hold, decided through the provisioner's engine as in the daemon; emit is
// called once per chain and policy, in injection order. The baselines need
// no model, so nothing they do depends on a fold's training data; learned
// (when not nil) builds the policies fitted for the replayed period, before
// the registry is asked.
func ReplayBaselines(ctx context.Context, sc *scenario.Scenario, p scenario.Protocol, from, until time.Time, policies []string, workers int,
	learned provisioner.PolicyFactory, progress func(done, total int), emit func(policy string, inject time.Time, nodes, gpus int, gap time.Duration, censored bool)) error {
	tick := p.WithDefaults(sc.Config).Tick
	samples, err := RunPairs(ctx, PairConfig{Scenario: sc, Protocol: p, From: from, Until: until, Policies: policies, Workers: workers, Progress: progress,
		Factory: func(probe models.OracleProbe) provisioner.PolicyFactory {
			base := models.PolicyFactory("", models.PolicyOptions{Probe: probe, Tick: tick})
			if learned == nil {
				return base
			}
			return func(name string) (provisioner.Policy, error) {
				if p, err := learned(name); p != nil || err != nil {
					return p, err
				}
				return base(name)
			}
		}})
	if err != nil {
		return err
	}
	for _, s := range samples {
		emit(s.Policy, s.Inject, s.Nodes, s.GPUs, s.Gap, s.Censored)
	}
	return nil
}
