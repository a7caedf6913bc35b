package nn

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/mirage-gpu/mirage/models"
)

// Loss selects what MLP.TrainStep minimises.
type Loss string

// Losses.
const (
	// LossMSE: Σ mask·(out − target)² / batch. With mask = 1 it is plain
	// regression; DQN sets mask to the one-hot of the action taken, so only
	// that Q-value moves toward its TD target.
	LossMSE Loss = "mse"
	// LossPolicy: REINFORCE with an entropy bonus on a softmax over the
	// outputs: −Σ weight·log π / batch − β·Σ mask·H(π) / batch, where
	// weight is the one-hot of the action taken times its advantage
	// (return − baseline) and mask weighs each row's entropy (ones; zeros
	// for padding rows).
	LossPolicy Loss = "policy"
)

// MLPConfig describes a fully connected network: ReLU hidden layers, linear outputs.
type MLPConfig struct {
	Inputs       int     // input width
	Hidden       []int   // hidden layer widths, e.g. [64 64]
	Outputs      int     // output width (1 for regression, one per action for dqn/pg)
	LearningRate float64 // Adam step size (default 1e-3)
	Entropy      float64 // β of LossPolicy's entropy bonus
	Seed         uint64  // weight initialisation seed
}

// MLP is a small network trained with gorgonia (Adam) and evaluated in pure Go.
//
// Weights live in gorgonia tensors; Forward and ForwardBatch compute the same
// function with plain loops (no graph, no allocation per call beyond the
// output), which is what a per-decision daemon needs. Not safe for
// concurrent TrainStep; Forward may run concurrently with Forward.
type MLP struct {
	cfg     MLPConfig
	weights [][]float64 // per layer: W (in×out, row-major) then b (out), alternating
	shapes  [][2]int    // per weights entry

	train *mlpTrainer // built on the first TrainStep
}

// mlpTrainer is the gorgonia graph for one loss and batch size.
type mlpTrainer struct {
	loss    Loss
	batch   int
	g       *G.ExprGraph
	x, y, m *G.Node // inputs, targets (or action weights), mask
	params  G.Nodes
	lossVal G.Value
	vm      G.VM
	solver  *G.AdamSolver
}

// NewMLP returns a network with Glorot-uniform weights drawn from cfg.Seed and zero biases.
func NewMLP(cfg MLPConfig) (*MLP, error) {
	if cfg.Inputs <= 0 || cfg.Outputs <= 0 {
		return nil, fmt.Errorf("mlp: inputs %d, outputs %d must be positive", cfg.Inputs, cfg.Outputs)
	}
	if cfg.LearningRate == 0 {
		cfg.LearningRate = 1e-3
	}
	cfg.Hidden = slices.Clone(cfg.Hidden)
	r := rand.New(rand.NewPCG(cfg.Seed, 0x6e6e))
	m := &MLP{cfg: cfg}
	sizes := append(append([]int{cfg.Inputs}, cfg.Hidden...), cfg.Outputs)
	for l := 0; l+1 < len(sizes); l++ {
		in, out := sizes[l], sizes[l+1]
		lim := math.Sqrt(6 / float64(in+out))
		w := make([]float64, in*out)
		for i := range w {
			w[i] = (2*r.Float64() - 1) * lim
		}
		m.weights = append(m.weights, w, make([]float64, out))
		m.shapes = append(m.shapes, [2]int{in, out}, [2]int{1, out})
	}
	return m, nil
}

// Config returns the network's configuration.
func (m *MLP) Config() MLPConfig { return m.cfg }

// Forward computes the outputs for one input into out (allocated when nil) and returns it.
func (m *MLP) Forward(x []float64, out []float64) ([]float64, error) {
	if len(x) != m.cfg.Inputs {
		return nil, fmt.Errorf("mlp forward: %w: got %d, want %d", models.ErrFeatureCount, len(x), m.cfg.Inputs)
	}
	var bufA, bufB [256]float64
	cur := x
	for l := 0; l < len(m.weights); l += 2 {
		w, b := m.weights[l], m.weights[l+1]
		in, n := m.shapes[l][0], m.shapes[l][1]
		var next []float64
		last := l+2 == len(m.weights)
		switch {
		case last:
			if cap(out) < n {
				out = make([]float64, n)
			}
			next = out[:n]
		case n <= len(bufA) && l%4 == 0:
			next = bufA[:n]
		case n <= len(bufB):
			next = bufB[:n]
		default:
			next = make([]float64, n)
		}
		copy(next, b)
		for i := 0; i < in; i++ {
			xi := cur[i]
			if xi == 0 {
				continue
			}
			row := w[i*n : (i+1)*n]
			for j, wij := range row {
				next[j] += xi * wij
			}
		}
		if !last {
			for j, v := range next {
				if v < 0 {
					next[j] = 0
				}
			}
		}
		cur = next
	}
	return cur, nil
}

// ForwardBatch computes the outputs of every row; out[i] is reused when long enough.
func (m *MLP) ForwardBatch(rows [][]float64, out [][]float64) ([][]float64, error) {
	if len(out) < len(rows) {
		out = append(out, make([][]float64, len(rows)-len(out))...)
	}
	for i, r := range rows {
		o, err := m.Forward(r, out[i])
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		out[i] = o
	}
	return out[:len(rows)], nil
}

// CopyFrom sets m's weights to src's (same shapes): the target-network update of DQN.
func (m *MLP) CopyFrom(src *MLP) error {
	if len(src.weights) != len(m.weights) {
		return errors.New("mlp copy: different architectures")
	}
	for i := range m.weights {
		if len(src.weights[i]) != len(m.weights[i]) {
			return errors.New("mlp copy: different architectures")
		}
		copy(m.weights[i], src.weights[i])
	}
	m.pushWeights()
	return nil
}

// Clone returns an independent copy of m's configuration and weights (no optimiser state).
func (m *MLP) Clone() *MLP {
	c := &MLP{cfg: m.cfg, shapes: slices.Clone(m.shapes)}
	c.cfg.Hidden = slices.Clone(m.cfg.Hidden)
	for _, w := range m.weights {
		c.weights = append(c.weights, slices.Clone(w))
	}
	return c
}

// pushWeights copies the canonical weights into the training graph's tensors.
func (m *MLP) pushWeights() {
	if m.train == nil {
		return
	}
	for i, p := range m.train.params {
		copy(p.Value().Data().([]float64), m.weights[i])
	}
}

// pullWeights copies the training graph's tensors into the canonical weights.
func (m *MLP) pullWeights() {
	for i, p := range m.train.params {
		copy(m.weights[i], p.Value().Data().([]float64))
	}
}

// buildTrainer makes the gorgonia graph for loss at a fixed batch size.
func (m *MLP) buildTrainer(loss Loss, batch int) (*mlpTrainer, error) {
	t := &mlpTrainer{loss: loss, batch: batch, g: G.NewGraph()}
	g := t.g
	t.x = G.NewMatrix(g, G.Float64, G.WithShape(batch, m.cfg.Inputs), G.WithName("x"))
	t.y = G.NewMatrix(g, G.Float64, G.WithShape(batch, m.cfg.Outputs), G.WithName("y"))
	t.m = G.NewMatrix(g, G.Float64, G.WithShape(batch, m.cfg.Outputs), G.WithName("mask"))
	for i, w := range m.weights {
		val := tensor.New(tensor.WithShape(m.shapes[i][0], m.shapes[i][1]), tensor.WithBacking(slices.Clone(w)))
		t.params = append(t.params, G.NewMatrix(g, G.Float64, G.WithShape(m.shapes[i][0], m.shapes[i][1]), G.WithName(fmt.Sprint("p", i)), G.WithValue(val)))
	}
	cur := t.x
	var err error
	for l := 0; l < len(t.params); l += 2 {
		if cur, err = G.Mul(cur, t.params[l]); err != nil {
			return nil, err
		}
		if cur, err = G.BroadcastAdd(cur, t.params[l+1], nil, []byte{0}); err != nil {
			return nil, err
		}
		if l+2 < len(t.params) {
			if cur, err = G.Rectify(cur); err != nil {
				return nil, err
			}
		}
	}
	bsz := G.NewConstant(float64(batch))
	var cost *G.Node
	switch loss {
	case LossMSE:
		d := G.Must(G.Sub(cur, t.y))
		sq := G.Must(G.HadamardProd(G.Must(G.Square(d)), t.m))
		cost = G.Must(G.Div(G.Must(G.Sum(sq)), bsz))
	case LossPolicy:
		// y holds weight = one-hot(action)·advantage; mask weighs each row's entropy (0 for padding).
		p := G.Must(G.SoftMax(cur))
		logp := G.Must(G.Log(G.Must(G.Add(p, G.NewConstant(1e-12)))))
		pg := G.Must(G.Div(G.Must(G.Sum(G.Must(G.HadamardProd(logp, t.y)))), bsz))
		plogp := G.Must(G.HadamardProd(p, logp))
		ent := G.Must(G.Div(G.Must(G.Sum(G.Must(G.HadamardProd(plogp, t.m)))), bsz)) // = −mean H
		cost = G.Must(G.Sub(G.Must(G.Mul(G.NewConstant(m.cfg.Entropy), ent)), pg))
	default:
		return nil, fmt.Errorf("mlp: unknown loss %q", loss)
	}
	G.Read(cost, &t.lossVal)
	if _, err := G.Grad(cost, t.params...); err != nil {
		return nil, fmt.Errorf("mlp: grad: %w", err)
	}
	t.vm = G.NewTapeMachine(g, G.BindDualValues(t.params...))
	t.solver = G.NewAdamSolver(G.WithLearnRate(m.cfg.LearningRate))
	return t, nil
}

// TrainStep runs one Adam step on a batch and returns the loss before the
// step. X is batch×Inputs; Y batch×Outputs (targets for LossMSE, one-hot ×
// advantage for LossPolicy); mask batch×Outputs (nil = all ones) weighs the
// squared errors for LossMSE and the entropy for LossPolicy.
// The first call fixes loss and batch size; later calls must match them.
func (m *MLP) TrainStep(loss Loss, X, Y, mask [][]float64) (float64, error) {
	batch := len(X)
	if batch == 0 || len(Y) != batch || (mask != nil && len(mask) != batch) {
		return 0, fmt.Errorf("mlp train: batch %d, targets %d, mask %d", batch, len(Y), len(mask))
	}
	if m.train == nil {
		t, err := m.buildTrainer(loss, batch)
		if err != nil {
			return 0, err
		}
		m.train = t
	} else if m.train.loss != loss || m.train.batch != batch {
		return 0, fmt.Errorf("mlp train: built for %s batch %d, got %s batch %d", m.train.loss, m.train.batch, loss, batch)
	}
	t := m.train
	flat := func(rows [][]float64, w int, fill float64) (*tensor.Dense, error) {
		d := make([]float64, 0, batch*w)
		for i := 0; i < batch; i++ {
			if rows == nil {
				for j := 0; j < w; j++ {
					d = append(d, fill)
				}
				continue
			}
			if len(rows[i]) != w {
				return nil, fmt.Errorf("mlp train: row %d has %d values, want %d", i, len(rows[i]), w)
			}
			d = append(d, rows[i]...)
		}
		return tensor.New(tensor.WithShape(batch, w), tensor.WithBacking(d)), nil
	}
	xv, err := flat(X, m.cfg.Inputs, 0)
	if err != nil {
		return 0, err
	}
	yv, err := flat(Y, m.cfg.Outputs, 0)
	if err != nil {
		return 0, err
	}
	mv, err := flat(mask, m.cfg.Outputs, 1)
	if err != nil {
		return 0, err
	}
	if err := errors.Join(G.Let(t.x, xv), G.Let(t.y, yv), G.Let(t.m, mv)); err != nil {
		return 0, err
	}
	defer t.vm.Reset()
	if err := t.vm.RunAll(); err != nil {
		return 0, fmt.Errorf("mlp train: %w", err)
	}
	lv := t.lossVal.Data().(float64)
	if err := t.solver.Step(G.NodesToValueGrads(t.params)); err != nil {
		return 0, fmt.Errorf("mlp train: adam: %w", err)
	}
	m.pullWeights()
	return lv, nil
}

// mlpFile is the gob encoding of an MLP.
type mlpFile struct {
	Config  MLPConfig
	Shapes  [][2]int
	Weights [][]float64
}

// WriteTo writes the configuration and weights (gob).
func (m *MLP) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	err := gob.NewEncoder(cw).Encode(mlpFile{Config: m.cfg, Shapes: m.shapes, Weights: m.weights})
	return cw.n, err
}

// ReadMLP reads a network written by WriteTo (no optimiser state).
func ReadMLP(r io.Reader) (*MLP, error) {
	var f mlpFile
	if err := gob.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("mlp: %w: %v", models.ErrBadModel, err)
	}
	return mlpFromFile(f)
}

// mlpFromFile checks every layer of a decoded network against its
// configuration, since Forward indexes the weights by the shapes without
// checks: layer l's weights are in_l × out_l and its biases 1 × out_l, each
// tensor holding exactly that many values, with in_0 = Inputs, in_{l+1} =
// out_l, the hidden widths those of Config.Hidden, out_last = Outputs and
// every width positive. A file that fails any of it is ErrBadModel.
func mlpFromFile(f mlpFile) (*MLP, error) {
	nl := len(f.Shapes) / 2
	if len(f.Shapes) != len(f.Weights) || len(f.Shapes)%2 != 0 || nl == 0 {
		return nil, fmt.Errorf("mlp: %w: %d shapes, %d weight tensors", models.ErrBadModel, len(f.Shapes), len(f.Weights))
	}
	if f.Config.Inputs <= 0 || f.Config.Outputs <= 0 || len(f.Config.Hidden) != nl-1 {
		return nil, fmt.Errorf("mlp: %w: %d layers for inputs %d, hidden %v, outputs %d", models.ErrBadModel, nl, f.Config.Inputs, f.Config.Hidden, f.Config.Outputs)
	}
	in := f.Config.Inputs
	for l := range nl {
		out := f.Config.Outputs
		if l < nl-1 {
			out = f.Config.Hidden[l]
		}
		w, b := f.Shapes[2*l], f.Shapes[2*l+1]
		if out <= 0 || w != [2]int{in, out} || b != [2]int{1, out} {
			return nil, fmt.Errorf("mlp: %w: layer %d has shapes %v and %v, want [%d %d] and [1 %d]", models.ErrBadModel, l, w, b, in, out, out)
		}
		// in·out by division: sizes from a file may overflow a product.
		if nw := len(f.Weights[2*l]); nw%out != 0 || nw/out != in || len(f.Weights[2*l+1]) != out {
			return nil, fmt.Errorf("mlp: %w: layer %d holds %d weights and %d biases for shape [%d %d]", models.ErrBadModel, l, nw, len(f.Weights[2*l+1]), in, out)
		}
		in = out
	}
	return &MLP{cfg: f.Config, shapes: f.Shapes, weights: f.Weights}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
