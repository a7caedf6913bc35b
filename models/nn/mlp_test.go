package nn

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
)

// testLinear returns n rows of w features (uniform in [-1, 1]) with y = 2·x1 − x2.
func testLinear(n, w int, seed uint64) ([][]float64, []float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	X := make([][]float64, n)
	y := make([]float64, n)
	for i := range X {
		X[i] = make([]float64, w)
		for j := range X[i] {
			X[i][j] = 2*r.Float64() - 1
		}
		y[i] = 2*X[i][0] - X[i][1]
	}
	return X, y
}

func TestMLPLearnsLinear(t *testing.T) {
	X, y := testLinear(3000, 4, 1)
	m, err := TrainMLP(&models.Dataset{Schema: modeltest.Schema(4), X: X[:2000], Y: y[:2000]},
		MLPConfig{Hidden: []int{32, 32}, LearningRate: 3e-3}, MLPTrainOptions{Epochs: 10, Batch: 32}, models.Meta{Seed: 5, Trace: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	testX, testY := X[2000:], y[2000:]
	pred := make([]float64, len(testX))
	if err := m.PredictBatch(testX, pred); err != nil {
		t.Fatal(err)
	}
	// The constant predictor (training mean) has MAE ≈ E|2x1 − x2| ≈ 1.1 here.
	got, cst := models.MAE(pred, testY), models.MAE(models.Constant(models.Mean(y[:2000]), len(testY)), testY)
	if got > 0.2*cst {
		t.Errorf("MLP MAE %.4f not below a fifth of the constant predictor's %.4f", got, cst)
	}
	t.Logf("MLP MAE %.4f, constant %.4f", got, cst)

	dir := t.TempDir()
	if err := models.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	back, err := models.Load(dir, modeltest.Schema(4))
	if err != nil {
		t.Fatal(err)
	}
	if back.Meta().Kind != models.KindMLP || back.Meta().Params["hidden"] != "32,32" {
		t.Errorf("meta %+v", back.Meta())
	}
	got2 := make([]float64, len(testX))
	if err := back.PredictBatch(testX, got2); err != nil {
		t.Fatal(err)
	}
	for i := range got2 {
		if got2[i] != pred[i] {
			t.Fatalf("row %d: %v after load, %v before", i, got2[i], pred[i])
		}
	}
}

// TestMLPGraphMatchesForward checks that gorgonia's loss on a batch equals
// the loss computed with the pure-Go Forward on the same weights.
func TestMLPGraphMatchesForward(t *testing.T) {
	X, y := testLinear(16, 5, 2)
	Y := make([][]float64, len(y))
	mask := make([][]float64, len(y))
	for i := range y {
		Y[i] = []float64{y[i], -y[i]}
		mask[i] = []float64{1, float64(i % 2)}
	}
	net, err := NewMLP(MLPConfig{Inputs: 5, Hidden: []int{8, 8}, Outputs: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 3; step++ {
		want := 0.0
		for i, x := range X {
			out, err := net.Forward(x, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k := range out {
				d := out[k] - Y[i][k]
				want += mask[i][k] * d * d
			}
		}
		want /= float64(len(X))
		got, err := net.TrainStep(LossMSE, X, Y, mask)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("step %d: gorgonia loss %v, pure-Go loss %v", step, got, want)
		}
	}
	if _, err := net.TrainStep(LossMSE, X[:8], Y[:8], nil); err == nil {
		t.Error("other batch size accepted")
	}
}

func TestMLPCopyAndSerialise(t *testing.T) {
	a, _ := NewMLP(MLPConfig{Inputs: 3, Hidden: []int{4}, Outputs: 2, Seed: 1})
	b, _ := NewMLP(MLPConfig{Inputs: 3, Hidden: []int{4}, Outputs: 2, Seed: 2})
	x := []float64{0.5, -1, 2}
	oa, _ := a.Forward(x, nil)
	ob, _ := b.Forward(x, nil)
	if oa[0] == ob[0] {
		t.Fatal("different seeds gave the same network")
	}
	if err := b.CopyFrom(a); err != nil {
		t.Fatal(err)
	}
	ob, _ = b.Forward(x, nil)
	if oa[0] != ob[0] || oa[1] != ob[1] {
		t.Errorf("after CopyFrom: %v vs %v", ob, oa)
	}
	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	c, err := ReadMLP(&buf)
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := c.Forward(x, nil)
	if oc[0] != oa[0] || oc[1] != oa[1] {
		t.Errorf("after WriteTo/ReadMLP: %v vs %v", oc, oa)
	}
	if _, err := ReadMLP(bytes.NewReader([]byte("junk"))); err == nil {
		t.Error("junk accepted")
	}
	wrong, _ := NewMLP(MLPConfig{Inputs: 3, Hidden: []int{5}, Outputs: 2})
	if err := wrong.CopyFrom(a); err == nil {
		t.Error("CopyFrom across architectures accepted")
	}
}

// TestMLPPolicyLoss: REINFORCE with a positive advantage on action 1 in
// every state makes π(1|x) grow toward 1.
func TestMLPPolicyLoss(t *testing.T) {
	X, _ := testLinear(32, 3, 3)
	W := make([][]float64, len(X))
	for i := range W {
		W[i] = []float64{0, 1} // one-hot(action 1) × advantage 1
	}
	net, _ := NewMLP(MLPConfig{Inputs: 3, Hidden: []int{8}, Outputs: 2, LearningRate: 1e-2, Entropy: 0.01, Seed: 4})
	prob1 := func() float64 {
		out, _ := net.Forward(X[0], nil)
		return 1 / (1 + math.Exp(out[0]-out[1]))
	}
	before := prob1()
	for i := 0; i < 200; i++ {
		if _, err := net.TrainStep(LossPolicy, X, W, nil); err != nil {
			t.Fatal(err)
		}
	}
	if after := prob1(); after < 0.9 || after <= before {
		t.Errorf("π(1) went from %.3f to %.3f, want > 0.9", before, after)
	}
}

// BenchmarkMLPPredict is a per-decision MLPModel.Predict (scaling included) of a 65-64-64-1 network.
func BenchmarkMLPPredict(b *testing.B) {
	X, y := testLinear(2000, 65, 1)
	m, err := TrainMLP(&models.Dataset{Schema: modeltest.Schema(65), X: X, Y: y}, MLPConfig{Hidden: []int{64, 64}}, MLPTrainOptions{Epochs: 1}, models.Meta{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	reportMem := modeltest.ModelMemory(b, m)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := m.Predict(X[i%len(X)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportMem()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
}

func BenchmarkMLPForward(b *testing.B) {
	net, _ := NewMLP(MLPConfig{Inputs: 65, Hidden: []int{64, 64}, Outputs: 2, Seed: 1})
	X, _ := testLinear(1000, 65, 1)
	out := make([]float64, 2)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		net.Forward(X[i%len(X)], out)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
}

func BenchmarkMLPTrainStep64(b *testing.B) {
	net, _ := NewMLP(MLPConfig{Inputs: 40, Hidden: []int{64, 64}, Outputs: 1, Seed: 1})
	X, y := testLinear(64, 40, 1)
	Y := make([][]float64, len(y))
	for i := range y {
		Y[i] = []float64{y[i]}
	}
	for b.Loop() {
		if _, err := net.TrainStep(LossMSE, X, Y, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMLPTrain20kx40(b *testing.B) {
	X, y := testLinear(20000, 40, 1)
	ds := &models.Dataset{Schema: modeltest.Schema(40), X: X, Y: y}
	for b.Loop() {
		if _, err := TrainMLP(ds, MLPConfig{Hidden: []int{64, 64}}, MLPTrainOptions{Epochs: 5, Batch: 64}, models.Meta{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
