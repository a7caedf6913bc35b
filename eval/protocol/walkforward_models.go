package protocol

import (
	"context"
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/models/train"
)

// FoldModel is a learned policy's model for one walk-forward period: fitted
// only on chains whose every outcome was known by Start (Folds).
type FoldModel struct {
	Start, End time.Time
	Train      int // training chains
	Model      models.Model
	Guard      models.Model // xgb-online's guard (nil for the others)
}

// FitFolds fits the learned policy name for the cost once per period of
// s.Bounds, on the chain tables of RunWalkForward (through s.Cache), so
// that a replay of [Start, End) can be scored with a model that saw only
// earlier data. The fit is for the cost (a zero cost: the published one):
// a quantile model predicts the cost's decision quantile of the wait
// (train.DecisionQuantile) and its thresholds are tuned for it.
// train.OnlinePolicyName fits xgb-online (train.FitOnline): its model
// carries the online rule, and FoldModel.Guard its guard.
func FitFolds(ctx context.Context, s WFSpec, name string, cost scenario.GapCost) ([]FoldModel, error) {
	if len(s.Bounds) < 2 {
		return nil, mark(train.ErrSpec, fmt.Errorf("fit folds: need at least two bounds"))
	}
	sc, err := scenario.NewScenario(s.TraceName, s.Jobs, s.Cluster)
	if err != nil {
		return nil, mark(train.ErrInput, err)
	}
	g := dataset.GenOptions{Protocol: s.Protocol, Until: s.Bounds[len(s.Bounds)-1], Workers: s.Workers}
	var d *dataset.ChainData
	if s.Cache != "" {
		d, _, err = train.DayCache(s.Cache, s.Cluster, s.Protocol.WithDefaults(s.Cluster), 1, s.Seed).Generate(ctx, sc, g)
	} else {
		d, err = dataset.GenerateChainData(ctx, sc, g)
	}
	if err != nil {
		return nil, fmt.Errorf("fit folds: tables: %w", err)
	}
	var out []FoldModel
	for _, f := range Folds(d, s.Bounds) {
		o := train.PolicyTrainOptions{Seed: s.Seed, Protocol: s.Protocol, Cost: cost, Meta: models.Meta{Windows: models.Windows{TrainUntil: f.Start}}}
		fm, err := fitFold(name, f, o)
		if err != nil {
			return nil, fmt.Errorf("fit folds: %w", err)
		}
		out = append(out, fm)
	}
	return out, nil
}

// fitFold fits learned policy name (not a pinned form) on the chains
// before fold f, with options o: train.FitOnline for train.OnlinePolicyName
// (model and guard), train.TrainPolicy for the others.
func fitFold(name string, f Fold, o train.PolicyTrainOptions) (FoldModel, error) {
	td := &dataset.ChainData{Schema: f.Schema, Episodes: f.Train}
	fm := FoldModel{Start: f.Start, End: f.End, Train: len(f.Train)}
	var err error
	if name == train.OnlinePolicyName {
		var p *train.OnlinePolicy
		if p, err = train.FitOnline(td, o); err == nil {
			fm.Model, fm.Guard = p.Model, p.Guard
		}
	} else {
		fm.Model, err = train.TrainPolicy(name, td, nil, o)
	}
	if err != nil {
		return FoldModel{}, fmt.Errorf("%s from %s: %w", name, f.Start.Format("2006-01-02"), err)
	}
	return fm, nil
}
