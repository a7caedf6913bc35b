package train

import (
	"fmt"
	"time"

	"github.com/mirage-gpu/mirage/models/adapt"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
)

// Walk-forward evaluation on episode tables. Each fold scores the chains
// injected in one period with policies trained only on chains whose
// predecessor had ended before the period began; every decision a policy
// makes inside the period uses only hand-offs that had ended by then. The
// tables are exact (dataset.ChainEpisode), so a policy's outcome on a chain
// is the outcome at the first tick it submits.

// Fold is one period of a walk-forward evaluation.
type Fold struct {
	Schema     features.SchemaID      // feature schema of the tables
	Start, End time.Time              // scored injections in [Start, End)
	Train      []dataset.ChainEpisode // chains whose predecessor ended by Start
	Test       []dataset.ChainEpisode // chains injected in [Start, End), in injection order
}

// Folds cuts d's episodes (in injection order) at bounds: fold i scores
// [bounds[i], bounds[i+1]) and trains on every chain whose predecessor
// ended by bounds[i].
func Folds(d *dataset.ChainData, bounds []time.Time) []Fold {
	var out []Fold
	for i := 0; i+1 < len(bounds); i++ {
		f := Fold{Schema: d.Schema, Start: bounds[i], End: bounds[i+1]}
		for _, e := range d.Episodes {
			if !e.PredEnd.After(f.Start) {
				f.Train = append(f.Train, e)
			}
			if !e.Inject.Before(f.Start) && e.Inject.Before(f.End) {
				f.Test = append(f.Test, e)
			}
		}
		out = append(out, f)
	}
	return out
}

// WFOutcome is one policy's hand-off in a walk-forward fold.
type WFOutcome struct {
	Policy   string
	Fold     int
	Inject   time.Time
	Nodes    int
	GPUs     int
	Tick     int     // tick submitted at (−1: the deadline)
	Gap      float64 // seconds
	Censored bool
	Reactive float64 // the deadline submission's gap (seconds): the load class
}

// Table baselines of a walk-forward run.
const (
	WFReactive = "reactive" // the successor submitted at the deadline (Lead before the predecessor's end)
	WFOracle   = "oracle"   // the tick with the smallest |gap| (dataset.OracleTick)
)

// OnlinePolicyName names OnlinePolicy in a walk-forward run: xgb's
// predicted gap with a do-no-harm guard and online thresholds.
const OnlinePolicyName = "xgb-online"

// TableDecider decides on episode tables, episode by episode in injection
// order; Observe is told each outcome (an online policy learns from it).
type TableDecider interface {
	SubmitTick(ep *dataset.ChainEpisode) (int, error)
	Observe(o adapt.Outcome)
}

// WFOptions configure WalkForward.
type WFOptions struct {
	Policies []string           // learned policies (models.IsLearned, or OnlinePolicyName); WFReactive and WFOracle are always scored
	Train    PolicyTrainOptions // options of every fit
	Progress func(fold int, policy string)
}

// WalkForward trains each policy on each fold's training chains and plays
// it on the fold's chains in injection order. Outcomes come in fold, then
// policy (reactive, oracle, then opts.Policies), then injection order.
func WalkForward(folds []Fold, opts WFOptions) ([]WFOutcome, error) {
	var out []WFOutcome
	for fi, f := range folds {
		if len(f.Train) < 10 || len(f.Test) == 0 {
			return nil, fmt.Errorf("walk-forward fold %d (%s): %d training and %d scored chains: need ≥ 10 and ≥ 1",
				fi, f.Start.Format("2006-01-02"), len(f.Train), len(f.Test))
		}
		rec := func(name string, ep *dataset.ChainEpisode, k int) WFOutcome {
			g, c := ep.Outcome(k)
			o := WFOutcome{Policy: name, Fold: fi, Inject: ep.Inject, Nodes: ep.Nodes, GPUs: ep.GPUs, Tick: k, Gap: g, Censored: c, Reactive: ep.Reactive}
			out = append(out, o)
			return o
		}
		for i := range f.Test {
			rec(WFReactive, &f.Test[i], -1)
		}
		for i := range f.Test {
			rec(WFOracle, &f.Test[i], dataset.OracleTick(&f.Test[i]))
		}
		train := &dataset.ChainData{Schema: f.Schema, Episodes: f.Train}
		for _, name := range opts.Policies {
			if opts.Progress != nil {
				opts.Progress(fi, name)
			}
			d, err := FitTablePolicy(name, train, opts.Train)
			if err != nil {
				return nil, fmt.Errorf("walk-forward fold %d (%s): %w", fi, f.Start.Format("2006-01-02"), err)
			}
			for i := range f.Test {
				ep := &f.Test[i]
				k, err := d.SubmitTick(ep)
				if err != nil {
					return nil, err
				}
				o := rec(name, ep, k)
				if !o.Censored {
					gap := time.Duration(o.Gap * float64(time.Second))
					d.Observe(adapt.Outcome{At: ep.PredEnd.Add(gap), Nodes: ep.Nodes, Gap: gap})
				}
			}
		}
	}
	return out, nil
}
