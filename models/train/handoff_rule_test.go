package train

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/xgb"
	"github.com/mirage-gpu/mirage/provisioner"
)

// TestConformalShift, worked by hand: a model that always predicts a 60 s
// wait (log1p(60/60) = ln 2) and nine ticks, over three chains, whose waits
// are 60·(e^a − 1) s for a = 1 … 9, so that the residuals are a − ln 2.
// Coverage 0.8 takes the ⌈10 × 0.8⌉ = 8th smallest: 8 − ln 2; coverage
// 0.95 the ⌈9.5⌉ = 10th, past n, so the largest: 9 − ln 2.
func TestConformalShift(t *testing.T) {
	t0 := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	var eps []dataset.ChainEpisode
	a := 1.0
	for c := 0; c < 3; c++ {
		ep := dataset.ChainEpisode{Nodes: 1, GPUs: 3, First: t0, PredStart: t0, PredEnd: t0.Add(3 * time.Hour), Tick: time.Hour}
		for k := 0; k < 3; k++ {
			wait := 60 * (math.Exp(a) - 1)
			a++
			ep.X = append(ep.X, []float64{60})
			ep.Gap = append(ep.Gap, wait-ep.Left(k)) // WaitTarget = gap + time left
			ep.Censored = append(ep.Censored, false)
		}
		eps = append(eps, ep)
	}
	for _, c := range []struct{ q, want float64 }{{0.8, 8 - math.Ln2}, {0.95, 9 - math.Ln2}} {
		got, n, err := ConformalShift(column{models.Regression}, eps, c.q)
		if err != nil {
			t.Fatal(err)
		}
		if n != 9 || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q %v: shift %v over %d ticks, want %v over 9", c.q, got, n, c.want)
		}
	}
}

// TestHandOffRuleTrained: xgb trained for the training workload's cost
// (its successors hand off) decides by the hand-off rule, saved and loaded
// with the model: threshold 0 on the decision quantile (0.95 for that
// cost: 60/(60 + 2.5) capped at 0.95), no hold, the same rule for the
// training workload and no other, a QBETS floor at the same quantile. xgb-online for that cost keeps it,
// guard off and thresholds fixed. The published cost keeps its tuned rule.
func TestHandOffRuleTrained(t *testing.T) {
	testenv.XGBoost(t, xgb.CanTrain)
	train, _ := testSplit(t)
	cost, err := provisioner.WorkloadCost(provisioner.WorkloadTraining)
	if err != nil {
		t.Fatal(err)
	}
	m, err := TrainPolicy("xgb", train, nil, PolicyTrainOptions{Seed: 7, Cost: cost})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Meta().Decision
	wr, ok := r.ByWorkload[provisioner.WorkloadTraining]
	if r == nil || r.Threshold != 0 || r.BySize != nil || r.Hold != 0 || len(r.ByWorkload) != 1 || !ok || wr.Threshold != 0 || wr.BySize != nil || r.Target != models.TargetWait {
		t.Fatalf("rule %+v, want threshold 0 on the wait, nothing tuned", r)
	}
	if r.Floor == nil || r.Floor.Quantile != 0.95 || r.Floor.Confidence != 0.95 || !strings.HasPrefix(r.Tuned, "hand-off rule") {
		t.Fatalf("rule %+v (floor %+v), want the hand-off rule with a QBETS floor at 0.95", r, r.Floor)
	}
	dir := filepath.Join(t.TempDir(), "xgb")
	if err := models.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	back, err := models.LoadPolicyModel(filepath.Dir(dir), "xgb")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Meta().Decision, r) {
		t.Errorf("rule after loading %+v, before %+v", back.Meta().Decision, r)
	}
	op, err := FitOnline(train, PolicyTrainOptions{Seed: 7, Cost: cost})
	if err != nil {
		t.Fatal(err)
	}
	if op.Rule.Floor == nil || op.Rule.Online == nil || op.Rule.Online.GuardOn() || op.Rule.Online.Step != 0 {
		t.Errorf("xgb-online for the training cost: rule %+v, online %+v; want the floor, guard off, no step", op.Rule, op.Rule.Online)
	}
	pub, err := TrainPolicy("xgb", train, nil, PolicyTrainOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if pr := pub.Meta().Decision; pr.Floor != nil || pr.WaitShift != 0 || strings.HasPrefix(pr.Tuned, "hand-off rule") {
		t.Errorf("published cost: rule %+v, want the tuned rule", pr)
	}
}
