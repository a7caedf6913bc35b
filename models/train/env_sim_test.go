package train

import (
	"reflect"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/nn"
	"github.com/mirage-gpu/mirage/models/scenario"
)

func TestSimEnvMatchesTableEnv(t *testing.T) {
	sc := modeltest.Scenario(t)
	d := modeltest.ChainData(t)
	from := d.Episodes[0].Inject
	env, err := NewSimEnv(sc, modeltest.Protocol(), from, from.Add(time.Hour), scenario.DefaultGapCost, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The first injection point; the env draws the size, so find its episode after Reset.
	for _, waits := range []int{0, 5, 30} {
		s, err := env.Reset()
		if err != nil {
			t.Fatal(err)
		}
		var ep *dataset.ChainEpisode
		for i := range d.Episodes {
			if d.Episodes[i].Inject.Equal(from) && d.Episodes[i].Nodes == env.run.Chain.Nodes {
				ep = &d.Episodes[i]
			}
		}
		tab := &TableEnv{Episodes: []dataset.ChainEpisode{*ep}, Cost: scenario.DefaultGapCost, Scale: 60, rng: env.rng}
		ts, _ := tab.Reset()
		if !reflect.DeepEqual(s, ts) {
			t.Fatal("first states differ")
		}
		var r1, r2 float64
		for i := 0; ; i++ {
			a := nn.ActionWait
			if i == waits {
				a = nn.ActionSubmit
			}
			s1, rr1, done1, err1 := env.Step(a)
			s2, rr2, done2, err2 := tab.Step(a)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if done1 != done2 || !reflect.DeepEqual(s1, s2) {
				t.Fatalf("step %d: states or ends differ", i)
			}
			r1, r2 = rr1, rr2
			if done1 {
				break
			}
		}
		// Hand check of the reward: −60·|gap h| / 60 = −|gap h|.
		if r1 != r2 || r1 != -absF(env.LastGap)/3600 || env.LastGap != tab.LastGap {
			t.Errorf("submit after %d waits: rewards %v vs %v, gaps %v vs %v", waits, r1, r2, env.LastGap, tab.LastGap)
		}
	}
}

func absF(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
