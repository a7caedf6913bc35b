package xgb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dmitryikh/leaves"

	"github.com/mirage-gpu/mirage/models"
)

// ErrNoXGBoost: training XGBoost models needs a build with -tags xgboost (libxgboost-dev).
var ErrNoXGBoost = errors.New("this mirage was built without libxgboost (build with -tags xgboost and libxgboost-dev to train xgb, rf-xgb and wait models)")

// XGBModelFile is the model file name in an xgb / rf-xgb directory: the
// model exactly as libxgboost 1.7 saved it (deprecated binary format), so it
// can be loaded back into libxgboost; it is converted for leaves on load.
const XGBModelFile = "model.xgb"

// XGBParams are the libxgboost training parameters used by this package.
type XGBParams struct {
	Objective       string  // "reg:squarederror" or "binary:logistic"
	MaxDepth        int     // tree depth
	Eta             float64 // learning rate (1 in random-forest mode)
	Rounds          int     // boosting rounds (1 in random-forest mode)
	Subsample       float64 // row subsample per tree
	ColsampleByNode float64 // feature subsample per split
	NumParallelTree int     // trees per round (>1: random forest)
	MinChildWeight  float64 // minimum hessian sum per leaf
	Seed            uint64  // seed
	Threads         int     // nthread (0: all cores)
	TreeMethod      string  // "hist" (default), "exact", "approx"
	Quantile        float64 // >0: regress this quantile (pinball loss, custom gradients) instead of the mean
}

// DefaultQuantileParams regresses quantile q of the target (e.g. 0.1 and 0.9
// for a wait interval): 300 rounds of depth-4 trees on a standardised
// target. The pinball hessian is 1 per row, so min_child_weight 100 means at
// least 100 rows per leaf: with fewer, leaves fit the noise and held-out
// coverage drifts (depth 6 / weight 1 gave 0.18 below a 0.1 quantile on
// the synthetic test set, depth 4 / weight 100 gave 0.12).
func DefaultQuantileParams(q float64) XGBParams {
	p := DefaultXGBParams()
	p.Rounds, p.MaxDepth, p.MinChildWeight, p.Quantile = 300, 4, 100, q
	return p
}

// DefaultXGBParams is gradient boosting for the signed gap: 200 rounds of depth-6 trees.
func DefaultXGBParams() XGBParams {
	return XGBParams{Objective: "reg:squarederror", MaxDepth: 6, Eta: 0.1, Rounds: 200, Subsample: 0.8,
		ColsampleByNode: 1, NumParallelTree: 1, MinChildWeight: 1, TreeMethod: "hist"}
}

// DefaultRFXGBParams is XGBoost's random-forest mode for the "safe to submit"
// classification: 100 parallel trees in one round, eta 1, row and per-split
// feature subsampling.
func DefaultRFXGBParams() XGBParams {
	return XGBParams{Objective: "binary:logistic", MaxDepth: 8, Eta: 1, Rounds: 1, Subsample: 0.632,
		ColsampleByNode: 0.5, NumParallelTree: 100, MinChildWeight: 1, TreeMethod: "hist"}
}

// Map renders p for meta.json.
func (p XGBParams) Map() map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return map[string]string{
		"objective": p.Objective, "max_depth": strconv.Itoa(p.MaxDepth), "eta": f(p.Eta),
		"num_round": strconv.Itoa(p.Rounds), "subsample": f(p.Subsample), "colsample_bynode": f(p.ColsampleByNode),
		"num_parallel_tree": strconv.Itoa(p.NumParallelTree), "min_child_weight": f(p.MinChildWeight),
		"seed": strconv.FormatUint(p.Seed, 10), "nthread": strconv.Itoa(p.Threads), "tree_method": p.TreeMethod,
		"quantile": f(p.Quantile),
	}
}

// XGBModel serves an XGBoost model in pure Go through leaves (no libxgboost needed).
type XGBModel struct {
	meta  models.Meta
	raw   []byte           // as saved by libxgboost 1.7
	ens   *leaves.Ensemble // converted
	width int
}

// NewXGBModel wraps a libxgboost 1.7 binary model for serving. meta.Kind must
// be KindXGB or KindRFXGB; meta.Task is set from the objective.
func NewXGBModel(raw []byte, meta models.Meta) (*XGBModel, error) {
	conv, hd, err := ConvertXGB17ForLeaves(raw)
	if err != nil {
		return nil, err
	}
	logistic := hd.Objective == "binary:logistic" || hd.Objective == "reg:logistic"
	ens, err := leavesLoad(conv, logistic)
	if err != nil {
		return nil, err
	}
	if logistic {
		meta.Task = models.Classification
	} else {
		meta.Task = models.Regression
	}
	meta.ModelFile = XGBModelFile
	width := hd.NumFeature
	if n := len(meta.Schema.Fields); n > 0 && n != width {
		return nil, fmt.Errorf("%w: model has %d features, schema %s v%d has %d", models.ErrBadModel, width, meta.Schema.Name, meta.Schema.Version, n)
	}
	return &XGBModel{meta: meta, raw: raw, ens: ens, width: width}, nil
}

// Meta implements Model.
func (m *XGBModel) Meta() models.Meta { return m.meta }

// SetMeta implements models.MetaSetter (training records its rule and metrics).
func (m *XGBModel) SetMeta(meta models.Meta) { m.meta = meta }

// Raw returns the libxgboost model bytes (do not modify).
func (m *XGBModel) Raw() []byte { return m.raw }

// Predict implements Model. Inputs are rounded to float32 as libxgboost does.
func (m *XGBModel) Predict(features []float64) (float64, error) {
	if err := models.CheckLen(features, m.width); err != nil {
		return 0, err
	}
	var buf [128]float64
	x := buf[:0]
	if len(features) > len(buf) {
		x = make([]float64, 0, len(features))
	}
	for _, v := range features {
		x = append(x, float64(float32(v)))
	}
	return m.meta.Output.Apply(m.ens.PredictSingle(x, 0)), nil
}

// PredictBatch implements Model.
func (m *XGBModel) PredictBatch(rows [][]float64, out []float64) error {
	return models.PredictEach(m.Predict, rows, out)
}

// SaveFiles implements Model.
func (m *XGBModel) SaveFiles(dir string) error {
	return os.WriteFile(filepath.Join(dir, XGBModelFile), m.raw, 0o644)
}

func loadXGB(dir string, meta models.Meta) (models.Model, error) {
	raw, err := models.ReadFile(dir, XGBModelFile)
	if err != nil {
		return nil, err
	}
	return NewXGBModel(raw, meta)
}

func init() {
	models.RegisterLoader(models.KindXGB, loadXGB)
	models.RegisterLoader(models.KindRFXGB, loadXGB)
}

// leavesLoad reads a converted model with leaves. leaves trusts the file's
// structure (ConvertXGB17ForLeaves checks what it knows leaves indexes
// blindly); a panic inside it still becomes an ErrBadModel, not a crash.
func leavesLoad(conv []byte, logistic bool) (ens *leaves.Ensemble, err error) {
	defer func() {
		if r := recover(); r != nil {
			ens, err = nil, fmt.Errorf("%w: leaves could not read the converted model: %v", models.ErrBadModel, r)
		}
	}()
	ens, err = leaves.XGEnsembleFromReader(bufio.NewReader(bytes.NewReader(conv)), logistic)
	if err != nil {
		return nil, fmt.Errorf("leaves: %w", err)
	}
	return ens, nil
}
