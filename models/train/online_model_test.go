package train

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/xgb"
)

// TestOnlineModelRoundTrip: xgb-online saved as mirage train saves it (the
// model with its online rule, the guard beside it) is what the policy
// registry loads for submit and the daemon: the same rule, and a guard
// whose probabilities equal the trained one's on every validation tick.
// Without its guard directory the registry refuses it, saying what to do.
func TestOnlineModelRoundTrip(t *testing.T) {
	testenv.XGBoost(t, xgb.CanTrain)
	train, valid := testSplit(t)
	m, guard, err := fitOnlineModels(train, valid, PolicyTrainOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	meta := m.Meta()
	if meta.Decision == nil || meta.Decision.Online == nil || meta.Kind != models.KindXGB || guard.Meta().Kind != models.KindXGB || guard.Meta().Task != models.Classification {
		t.Fatalf("meta %+v, guard %+v", meta, guard.Meta())
	}
	if _, ok := meta.Metrics["valid_mean_abs_gap_h"]; !ok {
		t.Errorf("no validation outcome in %v", meta.Metrics)
	}
	// Whatever level the calibration chose, load it with the guard on.
	if err := models.UpdateMeta(m, func(mt *models.Meta) { mt.Decision.Online.Gamma = 0.5 }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.Save(filepath.Join(dir, models.PolicyXGBOnline), m); err != nil {
		t.Fatal(err)
	}
	if err := models.Save(filepath.Join(dir, models.PolicyXGBOnline, models.GuardDir), guard); err != nil {
		t.Fatal(err)
	}
	p, err := models.PolicyFactory(dir, models.PolicyOptions{})(models.PolicyXGBOnline)
	if err != nil {
		t.Fatal(err)
	}
	mp, ok := p.(*models.ModelPolicy)
	if !ok || mp.Guard == nil || mp.Rule.Online == nil || mp.Rule.Online.Gamma != 0.5 || mp.Rule.For(8) != meta.Decision.For(8) {
		t.Fatalf("loaded %T %+v", p, p)
	}
	n := 0
	for i := range valid.Episodes {
		for _, x := range valid.Episodes[i].X {
			want, err := guard.Predict(x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mp.Guard.Predict(x)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-5 {
				t.Fatalf("guard after loading: P(low)=%g, trained %g", got, want)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no validation ticks")
	}
	if err := os.RemoveAll(filepath.Join(dir, models.PolicyXGBOnline, models.GuardDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := models.PolicyFactory(dir, models.PolicyOptions{})(models.PolicyXGBOnline); err == nil || !strings.Contains(err.Error(), "its guard") || !strings.Contains(err.Error(), "mirage train --model xgb-online") {
		t.Errorf("without the guard: %v", err)
	}
}
