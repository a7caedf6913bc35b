package nn

import (
	"encoding/gob"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/models"
)

// MLPModelFile is the model file name in an mlp directory (gob: scaler + network).
const MLPModelFile = "mlp.gob"

// Scaler standardises features: (x − mean) / std, std 1 for constant columns.
type Scaler struct {
	Mean []float64 // per feature
	Std  []float64 // per feature, > 0
}

// FitScaler computes per-column mean and standard deviation of rows.
func FitScaler(rows [][]float64) Scaler {
	if len(rows) == 0 {
		return Scaler{}
	}
	w := len(rows[0])
	s := Scaler{Mean: make([]float64, w), Std: make([]float64, w)}
	for _, r := range rows {
		for j, v := range r {
			s.Mean[j] += v
		}
	}
	n := float64(len(rows))
	for j := range s.Mean {
		s.Mean[j] /= n
	}
	for _, r := range rows {
		for j, v := range r {
			d := v - s.Mean[j]
			s.Std[j] += d * d
		}
	}
	for j := range s.Std {
		s.Std[j] = math.Sqrt(s.Std[j] / n)
		if s.Std[j] < 1e-12 {
			s.Std[j] = 1
		}
	}
	return s
}

// Apply writes the standardised x into dst (allocated when short) and returns it.
func (s Scaler) Apply(x, dst []float64) []float64 {
	if cap(dst) < len(x) {
		dst = make([]float64, len(x))
	}
	dst = dst[:len(x)]
	for j, v := range x {
		dst[j] = (v - s.Mean[j]) / s.Std[j]
	}
	return dst
}

// MLPTrainOptions control TrainMLP.
type MLPTrainOptions struct {
	Epochs int // passes over the data (default 20)
	Batch  int // minibatch size (default 64); the last partial batch of an epoch is skipped
}

// MLPModel is a regression Model: a standardised-input, standardised-target MLP.
type MLPModel struct {
	meta    models.Meta
	Net     *MLP    // the network
	In      Scaler  // input standardisation
	OutMean float64 // target mean
	OutStd  float64 // target standard deviation
}

// TrainMLP fits an MLP regressor on ds with Adam (cfg.Inputs and cfg.Outputs
// are set from the data; cfg.Seed defaults to meta.Seed). The data order is
// shuffled per epoch from the seed, so a run is deterministic.
func TrainMLP(ds *models.Dataset, cfg MLPConfig, opt MLPTrainOptions, meta models.Meta) (*MLPModel, error) {
	if err := ds.Validate(); err != nil {
		return nil, err
	}
	if opt.Epochs == 0 {
		opt.Epochs = 20
	}
	if opt.Batch == 0 {
		opt.Batch = 64
	}
	if len(ds.X) < opt.Batch {
		return nil, fmt.Errorf("mlp: %d rows, fewer than one batch of %d", len(ds.X), opt.Batch)
	}
	if cfg.Seed == 0 {
		cfg.Seed = meta.Seed
	}
	cfg.Inputs, cfg.Outputs = ds.Width(), 1
	start := time.Now() // wall time of the fit, recorded in meta.json only
	net, err := NewMLP(cfg)
	if err != nil {
		return nil, err
	}
	m := &MLPModel{Net: net, In: FitScaler(ds.X), OutMean: models.Mean(ds.Y)}
	for _, y := range ds.Y {
		m.OutStd += (y - m.OutMean) * (y - m.OutMean)
	}
	m.OutStd = math.Sqrt(m.OutStd / float64(len(ds.Y)))
	if m.OutStd < 1e-12 {
		m.OutStd = 1
	}
	xs := make([][]float64, len(ds.X))
	ys := make([][]float64, len(ds.X))
	for i := range ds.X {
		xs[i] = m.In.Apply(ds.X[i], nil)
		ys[i] = []float64{(ds.Y[i] - m.OutMean) / m.OutStd}
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x747261696e))
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	bx := make([][]float64, opt.Batch)
	by := make([][]float64, opt.Batch)
	var last float64
	for ep := 0; ep < opt.Epochs; ep++ {
		r.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for s := 0; s+opt.Batch <= len(idx); s += opt.Batch {
			for k := 0; k < opt.Batch; k++ {
				bx[k], by[k] = xs[idx[s+k]], ys[idx[s+k]]
			}
			if last, err = net.TrainStep(LossMSE, bx, by, nil); err != nil {
				return nil, err
			}
		}
	}
	meta.Kind, meta.Task, meta.ModelFile, meta.Schema = models.KindMLP, models.Regression, MLPModelFile, ds.Schema
	meta.TrainRows = len(ds.X)
	meta.TrainSeconds = time.Since(start).Seconds()
	meta.Libraries = models.LibraryVersions()
	hid := make([]string, len(cfg.Hidden))
	for i, h := range cfg.Hidden {
		hid[i] = strconv.Itoa(h)
	}
	meta.Params = map[string]string{"hidden": strings.Join(hid, ","), "learning_rate": strconv.FormatFloat(net.cfg.LearningRate, 'g', -1, 64),
		"epochs": strconv.Itoa(opt.Epochs), "batch": strconv.Itoa(opt.Batch), "seed": strconv.FormatUint(cfg.Seed, 10),
		"final_batch_loss": strconv.FormatFloat(last, 'g', 6, 64)}
	m.meta = meta
	return m, nil
}

// Meta implements Model.
func (m *MLPModel) Meta() models.Meta { return m.meta }

// SetMeta implements models.MetaSetter (training records its rule and metrics).
func (m *MLPModel) SetMeta(meta models.Meta) { m.meta = meta }

// Predict implements Model.
func (m *MLPModel) Predict(features []float64) (float64, error) {
	if err := models.CheckLen(features, m.Net.cfg.Inputs); err != nil {
		return 0, err
	}
	var xb [128]float64
	var ob [1]float64
	x := m.In.Apply(features, xb[:0])
	out, err := m.Net.Forward(x, ob[:0])
	if err != nil {
		return 0, err
	}
	return out[0]*m.OutStd + m.OutMean, nil
}

// PredictBatch implements Model.
func (m *MLPModel) PredictBatch(rows [][]float64, out []float64) error {
	return models.PredictEach(m.Predict, rows, out)
}

// mlpModelFile is the gob layout of mlp.gob.
type mlpModelFile struct {
	In      Scaler
	OutMean float64
	OutStd  float64
	Net     mlpFile
}

// SaveFiles implements Model.
func (m *MLPModel) SaveFiles(dir string) error {
	f, err := os.Create(filepath.Join(dir, MLPModelFile))
	if err != nil {
		return err
	}
	err = gob.NewEncoder(f).Encode(mlpModelFile{In: m.In, OutMean: m.OutMean, OutStd: m.OutStd,
		Net: mlpFile{Config: m.Net.cfg, Shapes: m.Net.shapes, Weights: m.Net.weights}})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func loadMLP(dir string, meta models.Meta) (models.Model, error) {
	f, err := models.OpenFile(dir, MLPModelFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mf mlpModelFile
	if err := gob.NewDecoder(f).Decode(&mf); err != nil {
		return nil, fmt.Errorf("%w: %v", models.ErrBadModel, err)
	}
	net, err := mlpFromFile(mf.Net)
	if err != nil {
		return nil, err
	}
	if len(mf.In.Mean) != net.cfg.Inputs || len(mf.In.Std) != net.cfg.Inputs {
		return nil, fmt.Errorf("%w: inconsistent mlp file", models.ErrBadModel)
	}
	return &MLPModel{meta: meta, Net: net, In: mf.In, OutMean: mf.OutMean, OutStd: mf.OutStd}, nil
}

func init() { models.RegisterLoader(models.KindMLP, loadMLP) }
