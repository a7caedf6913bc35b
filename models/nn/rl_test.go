package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
)

// testCountdownEnv is a toy chain: the predecessor ends T steps after the
// episode starts (T uniform in 6..13); a submitted successor waits W = 3
// steps in the queue. Submitting at step k gives gap k + W − T and reward
// −|gap|; never submitting gives the reactive gap W at step T. The state is
// the remaining time (T − k)/16 and a noise feature. The optimum submits when
// 3 steps remain (gap 0); submitting at once averages |gap| 6.5, reactive 3.
type testCountdownEnv struct {
	rng     *rand.Rand
	t, k    int
	lastGap int
}

const testCountdownWait = 3

func (e *testCountdownEnv) state() []float64 {
	return []float64{float64(e.t-e.k) / 16, e.rng.Float64()}
}

func (e *testCountdownEnv) Reset() ([]float64, error) {
	e.t, e.k = 6+e.rng.IntN(8), 0
	return e.state(), nil
}

func (e *testCountdownEnv) Step(a int) ([]float64, float64, bool, error) {
	if a == ActionSubmit {
		e.lastGap = e.k + testCountdownWait - e.t
		return nil, -math.Abs(float64(e.lastGap)), true, nil
	}
	e.k++
	if e.k >= e.t {
		e.lastGap = testCountdownWait
		return nil, -testCountdownWait, true, nil
	}
	return e.state(), 0, false, nil
}

// testMeanAbsGap plays n greedy episodes and returns the mean |gap|.
func testMeanAbsGap(t *testing.T, env *testCountdownEnv, n int, play func() error) float64 {
	t.Helper()
	s := 0.0
	for i := 0; i < n; i++ {
		if err := play(); err != nil {
			t.Fatal(err)
		}
		s += math.Abs(float64(env.lastGap))
	}
	return s / float64(n)
}

func TestDQNLearnsCountdown(t *testing.T) {
	env := &testCountdownEnv{rng: rand.New(rand.NewPCG(1, 2))}
	d, err := NewDQN(2, 2, DQNConfig{Hidden: []int{32}, LearningRate: 3e-3, Gamma: 0.99, Batch: 32, Warmup: 200,
		TargetEvery: 100, Epsilon: EpsilonSchedule{Start: 1, End: 0.02, Steps: 10000}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for ep := 0; ep < 2500; ep++ {
		if _, _, err := d.RunEpisode(env, true, 100); err != nil {
			t.Fatal(err)
		}
	}
	got := testMeanAbsGap(t, env, 300, func() error { _, _, err := d.RunEpisode(env, false, 100); return err })
	t.Logf("DQN greedy mean |gap| %.2f (submit-now 6.5, reactive 3)", got)
	if got >= 0.5 {
		t.Errorf("DQN mean |gap| %.2f, want < 0.5 (optimum 0, reactive baseline 3)", got)
	}
	// Greedy consistency, and the saved policy model decides as the learner does.
	schema := modeltest.Schema(2)
	pm, err := NewPolicyNetModel(d.Network(), nil, models.Meta{Kind: models.KindDQN, Schema: schema, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.Save(dir, pm); err != nil {
		t.Fatal(err)
	}
	back, err := models.Load(dir, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, rem := range []float64{1, 2, 3, 4, 8, 13} {
		s := []float64{rem / 16, 0.5}
		q, _ := d.Q(s)
		a, _ := d.Greedy(s)
		if a != argmax(q) {
			t.Error("Greedy disagrees with Q")
		}
		pref, err := back.Predict(s)
		if err != nil {
			t.Fatal(err)
		}
		if pref != q[ActionSubmit]-q[ActionWait] || (pref >= 0) != (a == ActionSubmit) {
			t.Errorf("remaining %v: saved preference %v, Q %v, greedy %d", rem, pref, q, a)
		}
	}
}

func TestPGLearnsCountdown(t *testing.T) {
	env := &testCountdownEnv{rng: rand.New(rand.NewPCG(4, 5))}
	p, err := NewPG(2, 2, PGConfig{Hidden: []int{32}, LearningRate: 1e-2, Gamma: 0.99, Entropy: 0.01, Batch: 128, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 400; it++ {
		var eps []Episode
		for i := 0; i < 16; i++ {
			ep, err := p.Play(env, false, 100)
			if err != nil {
				t.Fatal(err)
			}
			eps = append(eps, ep)
		}
		if _, err := p.Update(eps); err != nil {
			t.Fatal(err)
		}
	}
	got := testMeanAbsGap(t, env, 300, func() error { _, err := p.Play(env, true, 100); return err })
	t.Logf("PG greedy mean |gap| %.2f (submit-now 6.5, reactive 3)", got)
	if got >= 0.5 {
		t.Errorf("PG mean |gap| %.2f, want < 0.5 (optimum 0, reactive baseline 3)", got)
	}
	pr, _ := p.Probs([]float64{0.5, 0.5})
	if s := pr[0] + pr[1]; math.Abs(s-1) > 1e-12 {
		t.Errorf("probabilities sum to %v", s)
	}
	pm, err := NewPolicyNetModel(p.Network(), nil, models.Meta{Kind: models.KindPG, Schema: modeltest.Schema(2), Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := models.Save(dir, pm); err != nil {
		t.Fatal(err)
	}
	back, err := models.Load(dir, modeltest.Schema(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, rem := range []float64{1, 3, 8, 13} {
		s := []float64{rem / 16, 0.5}
		pr, _ := p.Probs(s)
		pref, _ := back.Predict(s)
		// The logit difference is log(π(submit)/π(wait)).
		if want := math.Log(pr[ActionSubmit] / pr[ActionWait]); math.Abs(pref-want) > 1e-9 {
			t.Errorf("remaining %v: preference %v, log odds %v", rem, pref, want)
		}
	}
}

func TestReplayAndEpsilon(t *testing.T) {
	r := NewReplay(3, 1)
	for i := 0; i < 5; i++ {
		r.Add(Transition{A: i})
	}
	if r.Len() != 3 {
		t.Fatalf("len %d", r.Len())
	}
	seen := map[int]bool{}
	for _, tr := range r.Sample(100, nil) {
		seen[tr.A] = true
	}
	// Capacity 3 after adding 0..4 keeps 2, 3, 4.
	if len(seen) != 3 || !seen[2] || !seen[3] || !seen[4] {
		t.Errorf("sampled actions %v, want {2,3,4}", seen)
	}
	e := EpsilonSchedule{Start: 1, End: 0.1, Steps: 10}
	for _, c := range []struct {
		step int
		want float64
	}{{0, 1}, {5, 0.55}, {10, 0.1}, {50, 0.1}} {
		if got := e.At(c.step); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ε(%d) = %v, want %v", c.step, got, c.want)
		}
	}
}

func BenchmarkDQNUpdate(b *testing.B) {
	d, err := NewDQN(65, 2, DQNConfig{Hidden: []int{64, 64}, Batch: 64, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	X, _ := testLinear(1000, 65, 1)
	for i := 0; i < 200; i++ {
		d.replay.Add(Transition{S: X[i], A: i % 2, R: -1, S2: X[i+1]})
	}
	i := 0
	for b.Loop() {
		if _, err := d.Observe(Transition{S: X[i%999], A: i % 2, R: -1, S2: X[i%999+1]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
