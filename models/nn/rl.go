package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Env is an episodic environment with discrete actions, the seam between
// the learners here and the simulator: for chain submission the state is
// the feature vector of an Observation, action 0 is wait and 1 is submit,
// the episode ends at submit (or when the predecessor ends), and the reward
// is the configured cost of the resulting gap (0 for each wait).
type Env interface {
	// Reset starts a new episode and returns its first state.
	Reset() ([]float64, error)
	// Step applies an action and returns the next state, the reward and whether the episode ended.
	Step(action int) (next []float64, reward float64, done bool, err error)
}

// Actions of the chain-submission environment.
const (
	ActionWait   = 0 // ask again next cycle
	ActionSubmit = 1 // submit the successor now
)

// Transition is one step of experience.
type Transition struct {
	S    []float64 // state
	A    int       // action taken
	R    float64   // reward
	S2   []float64 // next state (ignored when Done)
	Done bool      // the episode ended with this step
}

// Replay is a fixed-capacity ring buffer of transitions sampled uniformly from a seeded source.
type Replay struct {
	buf  []Transition
	next int
	rng  *rand.Rand
}

// NewReplay returns an empty buffer holding at most capacity transitions.
func NewReplay(capacity int, seed uint64) *Replay {
	return &Replay{buf: make([]Transition, 0, capacity), rng: rand.New(rand.NewPCG(seed, 0x7265706c6179))}
}

// Add stores t, evicting the oldest transition when full.
func (r *Replay) Add(t Transition) {
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, t)
		return
	}
	r.buf[r.next] = t
	r.next = (r.next + 1) % len(r.buf)
}

// Len is the number of stored transitions.
func (r *Replay) Len() int { return len(r.buf) }

// Sample returns n transitions drawn uniformly with replacement (into dst when long enough).
func (r *Replay) Sample(n int, dst []Transition) []Transition {
	dst = dst[:0]
	for i := 0; i < n; i++ {
		dst = append(dst, r.buf[r.rng.IntN(len(r.buf))])
	}
	return dst
}

// EpsilonSchedule anneals exploration linearly from Start to End over Steps steps.
type EpsilonSchedule struct {
	Start, End float64 // ε at step 0 and from step Steps on
	Steps      int     // length of the linear decay
}

// At returns ε at a step.
func (e EpsilonSchedule) At(step int) float64 {
	if e.Steps <= 0 || step >= e.Steps {
		return e.End
	}
	return e.Start + (e.End-e.Start)*float64(step)/float64(e.Steps)
}

// DQNConfig configures a Deep Q-Network learner.
type DQNConfig struct {
	Hidden       []int           // hidden layers (default [64 64])
	LearningRate float64         // Adam (default 1e-3)
	Gamma        float64         // discount (default 0.99)
	Batch        int             // minibatch (default 64)
	ReplaySize   int             // replay capacity (default 100000)
	Warmup       int             // transitions before learning starts (default Batch)
	TargetEvery  int             // learning steps between target-network copies (default 500)
	Epsilon      EpsilonSchedule // exploration (default 1 → 0.05 over 10000 steps)
	Seed         uint64          // seed of weights, replay and exploration
	In           *Scaler         // optional input standardisation (fit on a sample of states)
	// Double uses Double DQN targets (van Hasselt et al., 2016): the online
	// network picks the next action, the target network values it, which
	// removes the upward bias of max over noisy estimates; with γ = 1 over
	// hundreds of steps that bias otherwise makes waiting look better than
	// any submission.
	Double bool
}

// DQN is a Deep Q-Network: an online MLP trained on replayed transitions
// toward r + γ·max Q_target(s′), a target MLP copied every TargetEvery
// updates, and ε-greedy exploration.
type DQN struct {
	cfg            DQNConfig
	online, target *MLP
	replay         *Replay
	rng            *rand.Rand
	steps, updates int
	batch          []Transition
	bx, by, bm     [][]float64
	sbuf, qbuf     []float64
	obuf           []float64
}

// NewDQN returns a learner for states of width inputs and actions discrete actions.
func NewDQN(inputs, actions int, cfg DQNConfig) (*DQN, error) {
	if cfg.Hidden == nil {
		cfg.Hidden = []int{64, 64}
	}
	if cfg.Gamma == 0 {
		cfg.Gamma = 0.99
	}
	if cfg.Batch == 0 {
		cfg.Batch = 64
	}
	if cfg.ReplaySize == 0 {
		cfg.ReplaySize = 100000
	}
	if cfg.Warmup < cfg.Batch {
		cfg.Warmup = cfg.Batch
	}
	if cfg.TargetEvery == 0 {
		cfg.TargetEvery = 500
	}
	if cfg.Epsilon == (EpsilonSchedule{}) {
		cfg.Epsilon = EpsilonSchedule{Start: 1, End: 0.05, Steps: 10000}
	}
	if cfg.In != nil && len(cfg.In.Mean) != inputs {
		return nil, fmt.Errorf("dqn: scaler has %d features, want %d", len(cfg.In.Mean), inputs)
	}
	online, err := NewMLP(MLPConfig{Inputs: inputs, Hidden: cfg.Hidden, Outputs: actions, LearningRate: cfg.LearningRate, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	d := &DQN{cfg: cfg, online: online, target: online.Clone(), replay: NewReplay(cfg.ReplaySize, cfg.Seed),
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x64716e))}
	d.bx, d.by, d.bm = make([][]float64, cfg.Batch), make([][]float64, cfg.Batch), make([][]float64, cfg.Batch)
	for i := range d.bx {
		d.bx[i], d.by[i], d.bm[i] = make([]float64, inputs), make([]float64, actions), make([]float64, actions)
	}
	return d, nil
}

// Network returns the online network (for saving; see MLP.WriteTo).
func (d *DQN) Network() *MLP { return d.online }

// scale standardises a state into dst.
func (d *DQN) scale(s, dst []float64) []float64 {
	if d.cfg.In == nil {
		return append(dst[:0], s...)
	}
	return d.cfg.In.Apply(s, dst)
}

// Q returns the online network's action values for a state.
func (d *DQN) Q(state []float64) ([]float64, error) {
	d.sbuf = d.scale(state, d.sbuf)
	return d.online.Forward(d.sbuf, nil)
}

// Greedy returns the action with the highest Q-value (lowest index on ties).
func (d *DQN) Greedy(state []float64) (int, error) {
	q, err := d.Q(state)
	if err != nil {
		return 0, err
	}
	return argmax(q), nil
}

// Act returns an ε-greedy action for the current step.
func (d *DQN) Act(state []float64) (int, error) {
	if d.rng.Float64() < d.cfg.Epsilon.At(d.steps) {
		return d.rng.IntN(d.online.cfg.Outputs), nil
	}
	return d.Greedy(state)
}

// Observe stores a transition and, once warm, runs one learning step; it
// returns the TD loss of that step (0 before warm-up).
func (d *DQN) Observe(t Transition) (float64, error) {
	d.steps++
	d.replay.Add(t)
	if d.replay.Len() < d.cfg.Warmup {
		return 0, nil
	}
	d.batch = d.replay.Sample(d.cfg.Batch, d.batch)
	for i, tr := range d.batch {
		d.bx[i] = d.scale(tr.S, d.bx[i])
		y := tr.R
		if !tr.Done {
			d.sbuf = d.scale(tr.S2, d.sbuf)
			q, err := d.target.Forward(d.sbuf, d.qbuf)
			if err != nil {
				return 0, err
			}
			d.qbuf = q
			a := argmax(q)
			if d.cfg.Double {
				qo, err := d.online.Forward(d.sbuf, d.obuf)
				if err != nil {
					return 0, err
				}
				d.obuf = qo
				a = argmax(qo)
			}
			y += d.cfg.Gamma * q[a]
		}
		for a := range d.by[i] {
			d.by[i][a], d.bm[i][a] = 0, 0
		}
		d.by[i][tr.A], d.bm[i][tr.A] = y, 1
	}
	loss, err := d.online.TrainStep(LossMSE, d.bx, d.by, d.bm)
	if err != nil {
		return 0, err
	}
	d.updates++
	if d.updates%d.cfg.TargetEvery == 0 {
		if err := d.target.CopyFrom(d.online); err != nil {
			return 0, err
		}
	}
	return loss, nil
}

// RunEpisode plays one episode with ε-greedy actions, learning from every
// step when learn is set (greedy and without learning otherwise), and returns
// the undiscounted return and the number of steps.
func (d *DQN) RunEpisode(env Env, learn bool, maxSteps int) (float64, int, error) {
	s, err := env.Reset()
	if err != nil {
		return 0, 0, err
	}
	ret := 0.0
	for n := 1; n <= maxSteps; n++ {
		var a int
		if learn {
			a, err = d.Act(s)
		} else {
			a, err = d.Greedy(s)
		}
		if err != nil {
			return ret, n, err
		}
		s2, r, done, err := env.Step(a)
		if err != nil {
			return ret, n, err
		}
		ret += r
		if learn {
			if _, err := d.Observe(Transition{S: s, A: a, R: r, S2: s2, Done: done}); err != nil {
				return ret, n, err
			}
		}
		if done {
			return ret, n, nil
		}
		s = s2
	}
	return ret, maxSteps, ErrEpisodeTooLong
}

// ErrEpisodeTooLong: an episode did not end within the step limit.
var ErrEpisodeTooLong = errors.New("episode exceeded the step limit")

func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// PGConfig configures REINFORCE with a baseline and an entropy bonus.
type PGConfig struct {
	Hidden       []int   // hidden layers (default [64 64])
	LearningRate float64 // Adam (default 1e-3)
	Gamma        float64 // discount (default 0.99, as published)
	Entropy      float64 // entropy bonus β (default 0.1, as published)
	Batch        int     // steps per gradient step; episodes are chunked and padded to it (default 256)
	BaselineRate float64 // rate of the running-mean baseline of returns (default 0.05)
	Seed         uint64  // seed of weights and action sampling
	In           *Scaler // optional input standardisation
}

// PG is a softmax policy trained by REINFORCE: after each batch of episodes
// the log-probability of every action taken is pushed up in proportion to
// its advantage (discounted return − a running-mean baseline), plus an
// entropy bonus that keeps exploring.
type PG struct {
	cfg      PGConfig
	net      *MLP
	rng      *rand.Rand
	baseline float64
	seen     bool
	sbuf     []float64
}

// NewPG returns a learner for states of width inputs and actions discrete actions.
func NewPG(inputs, actions int, cfg PGConfig) (*PG, error) {
	if cfg.Hidden == nil {
		cfg.Hidden = []int{64, 64}
	}
	if cfg.Gamma == 0 {
		cfg.Gamma = 0.99
	}
	if cfg.Entropy == 0 {
		cfg.Entropy = 0.1
	}
	if cfg.Batch == 0 {
		cfg.Batch = 256
	}
	if cfg.BaselineRate == 0 {
		cfg.BaselineRate = 0.05
	}
	if cfg.In != nil && len(cfg.In.Mean) != inputs {
		return nil, fmt.Errorf("pg: scaler has %d features, want %d", len(cfg.In.Mean), inputs)
	}
	net, err := NewMLP(MLPConfig{Inputs: inputs, Hidden: cfg.Hidden, Outputs: actions, LearningRate: cfg.LearningRate, Entropy: cfg.Entropy, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	return &PG{cfg: cfg, net: net, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7067))}, nil
}

// Network returns the policy network (logits).
func (p *PG) Network() *MLP { return p.net }

// Probs returns π(·|state).
func (p *PG) Probs(state []float64) ([]float64, error) {
	if p.cfg.In != nil {
		p.sbuf = p.cfg.In.Apply(state, p.sbuf)
	} else {
		p.sbuf = append(p.sbuf[:0], state...)
	}
	z, err := p.net.Forward(p.sbuf, nil)
	if err != nil {
		return nil, err
	}
	m := z[argmax(z)]
	s := 0.0
	for i := range z {
		z[i] = math.Exp(z[i] - m)
		s += z[i]
	}
	for i := range z {
		z[i] /= s
	}
	return z, nil
}

// Sample draws an action from π(·|state).
func (p *PG) Sample(state []float64) (int, error) {
	pr, err := p.Probs(state)
	if err != nil {
		return 0, err
	}
	u := p.rng.Float64()
	for a, q := range pr {
		if u < q {
			return a, nil
		}
		u -= q
	}
	return len(pr) - 1, nil
}

// Greedy returns the most probable action.
func (p *PG) Greedy(state []float64) (int, error) {
	pr, err := p.Probs(state)
	if err != nil {
		return 0, err
	}
	return argmax(pr), nil
}

// Episode is one played episode.
type Episode struct {
	States  [][]float64
	Actions []int
	Rewards []float64
}

// Play runs one episode sampling from the policy (greedy when greedy is set).
func (p *PG) Play(env Env, greedy bool, maxSteps int) (Episode, error) {
	var ep Episode
	s, err := env.Reset()
	if err != nil {
		return ep, err
	}
	for n := 0; n < maxSteps; n++ {
		var a int
		if greedy {
			a, err = p.Greedy(s)
		} else {
			a, err = p.Sample(s)
		}
		if err != nil {
			return ep, err
		}
		s2, r, done, err := env.Step(a)
		if err != nil {
			return ep, err
		}
		ep.States, ep.Actions, ep.Rewards = append(ep.States, s), append(ep.Actions, a), append(ep.Rewards, r)
		if done {
			return ep, nil
		}
		s = s2
	}
	return ep, ErrEpisodeTooLong
}

// Update runs REINFORCE on a batch of episodes and returns the mean loss.
// Steps are processed in chunks of Batch; the last chunk is padded with rows
// whose weight and mask are zero, and real rows are scaled so every chunk
// averages over its real steps.
func (p *PG) Update(eps []Episode) (float64, error) {
	type step struct {
		s   []float64
		a   int
		adv float64
	}
	var steps []step
	for _, ep := range eps {
		g := 0.0
		rets := make([]float64, len(ep.Rewards))
		for t := len(ep.Rewards) - 1; t >= 0; t-- {
			g = ep.Rewards[t] + p.cfg.Gamma*g
			rets[t] = g
		}
		for t := range rets {
			if !p.seen {
				p.baseline, p.seen = rets[t], true
			}
			steps = append(steps, step{s: ep.States[t], a: ep.Actions[t], adv: rets[t] - p.baseline})
			p.baseline += p.cfg.BaselineRate * (rets[t] - p.baseline)
		}
	}
	if len(steps) == 0 {
		return 0, nil
	}
	B, A := p.cfg.Batch, p.net.cfg.Outputs
	X, W, M := make([][]float64, B), make([][]float64, B), make([][]float64, B)
	total, chunks := 0.0, 0
	for lo := 0; lo < len(steps); lo += B {
		hi := min(lo+B, len(steps))
		scale := float64(B) / float64(hi-lo)
		for i := 0; i < B; i++ {
			W[i], M[i] = make([]float64, A), make([]float64, A)
			if lo+i >= hi {
				X[i] = make([]float64, p.net.cfg.Inputs)
				continue
			}
			st := steps[lo+i]
			if p.cfg.In != nil {
				X[i] = p.cfg.In.Apply(st.s, nil)
			} else {
				X[i] = st.s
			}
			W[i][st.a] = st.adv * scale
			for a := range M[i] {
				M[i][a] = scale
			}
		}
		l, err := p.net.TrainStep(LossPolicy, X, W, M)
		if err != nil {
			return 0, err
		}
		total += l
		chunks++
	}
	return total / float64(chunks), nil
}
