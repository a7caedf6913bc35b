package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
)

// Kind names a model family as stored in meta.json and accepted by `mirage train --model`.
type Kind string

// Model kinds: each has a file format in one of the learner packages (models/xgb, models/forest, models/nn).
const (
	KindXGB       Kind = "xgb"        // gradient-boosted trees (libxgboost training, leaves serving), regression of the signed gap
	KindRFXGB     Kind = "rf-xgb"     // XGBoost random-forest mode (num_parallel_tree, one round), classification "submitting now is safe"
	KindRFGolearn Kind = "rf-golearn" // golearn RandomForest (ID3 trees), classification "submitting now is safe"
	KindMLP       Kind = "mlp"        // gorgonia multi-layer perceptron (regression); the building block of dqn and pg
	KindDQN       Kind = "dqn"        // Deep Q-Network (gorgonia MLP, one output per action)
	KindPG        Kind = "pg"         // REINFORCE policy network (gorgonia MLP, one logit per action)
)

// KindRF is what the plain name `rf` resolves to: the random forest whose
// policy did better on the shared LS6 trace (README: "rf: golearn or
// XGBoost's random-forest mode"). On synthetic rows (TestCompareRF)
// XGBoost's mode wins on accuracy, AUC and fit time, and it still has the
// better AUC on LS6; but as a submission policy on February 2023 golearn's
// forest had a mean |gap| of 6.8–7.3 h in three fits against 11.6 h, so
// golearn is the default. Its fits are not reproducible (golearn draws
// from Go's global random source in concurrent goroutines): rf-xgb is the
// choice when a seed must reproduce the model.
const KindRF = KindRFGolearn

// ResolveKind maps user-facing names to stored kinds: "rf" is KindRF,
// "xgb-online" (an xgb model with an online rule) KindXGB; every other
// name maps to itself.
func ResolveKind(name string) Kind {
	switch name {
	case "rf":
		return KindRF
	case "xgb-online":
		return KindXGB
	}
	return Kind(name)
}

// Task is what a model's single output means.
type Task string

// Tasks.
const (
	// Regression: the output is a number in the target's unit (the signed gap in seconds for policies).
	Regression Task = "regression"
	// Classification: the output is the probability of the positive class ("submitting now is safe").
	Classification Task = "classification"
	// Preference: the output is how much the learned policy prefers submitting over waiting
	// (Q(submit) − Q(wait) for dqn, the logit difference for pg); ≥ 0 means submit.
	Preference Task = "preference"
)

// SafeGapThreshold is the label boundary for the classification framing: a
// decision is "safe" when the resulting gap (successor start − predecessor
// end) is at least this much, i.e. overlap of at most half an hour.
const SafeGapThreshold = -30 * time.Minute

// Windows are the trace-time intervals a model was trained and validated on;
// training and validation never overlap.
type Windows struct {
	TrainFrom  time.Time `json:"train_from,omitzero"`  // first decision time used for training
	TrainUntil time.Time `json:"train_until,omitzero"` // training uses decisions before this
	ValidFrom  time.Time `json:"valid_from,omitzero"`  // first validation decision time
	ValidUntil time.Time `json:"valid_until,omitzero"` // validation uses decisions before this
}

// Meta is a model directory's meta.json.
type Meta struct {
	Kind         Kind               `json:"kind"`                    // model family
	Task         Task               `json:"task"`                    // what Predict returns
	ModelFile    string             `json:"model_file"`              // file name inside the directory
	Schema       features.SchemaID  `json:"schema"`                  // feature schema the model was trained on
	Trace        string             `json:"trace,omitempty"`         // trace file (or "synthetic")
	Windows      Windows            `json:"windows"`                 // training/validation windows
	Seed         uint64             `json:"seed"`                    // seed of the run
	Params       map[string]string  `json:"params,omitempty"`        // hyper-parameters, as given
	Libraries    map[string]string  `json:"libraries,omitempty"`     // library versions (Go modules, libxgboost, Go)
	Metrics      map[string]float64 `json:"metrics,omitempty"`       // validation metrics (mae, rmse, accuracy, auc, ...)
	Output       *OutputTransform   `json:"output,omitempty"`        // affine map from the raw model output to the prediction, if any
	Decision     *DecisionRule      `json:"decision,omitempty"`      // how a policy turns the output into submit/wait (policies only)
	TrainRows    int                `json:"train_rows,omitempty"`    // training rows
	TrainSeconds float64            `json:"train_seconds,omitempty"` // wall time of the fit
	Created      time.Time          `json:"created,omitzero"`        // when it was trained (caller's clock)
	// Cluster is the simulated cluster the model was trained on (nil in
	// models from before it was recorded): its features count nodes and
	// GPUs, so on a cluster of another shape it extrapolates.
	Cluster *ClusterShape `json:"cluster,omitempty"`
}

// ClusterShape is a cluster's size as a model sees it: its nodes and the
// GPUs of its largest node.
type ClusterShape struct {
	Nodes       int `json:"nodes"`
	GPUsPerNode int `json:"gpus_per_node"`
}

// ShapeOf is the shape of a cluster of these nodes, whatever their state.
func ShapeOf(nodes []provisioner.Node) ClusterShape {
	s := ClusterShape{Nodes: len(nodes)}
	for _, n := range nodes {
		s.GPUsPerNode = max(s.GPUsPerNode, n.GPUs)
	}
	return s
}

// String is "88 nodes × 3 GPUs".
func (s ClusterShape) String() string {
	return fmt.Sprintf("%d nodes × %d GPUs", s.Nodes, s.GPUsPerNode)
}

// OutputTransform maps a model's raw output r to Shift + Scale·r and then,
// when Expm1Unit > 0, to (e^y − 1)·Expm1Unit: models trained on a
// standardised target (quantile XGBoost) store the affine part, models
// trained on log1p(target/unit) (the wait quantiles) the exponential.
type OutputTransform struct {
	Shift     float64 `json:"shift"`                // added after scaling
	Scale     float64 `json:"scale"`                // multiplies the raw output
	Expm1Unit float64 `json:"expm1_unit,omitempty"` // > 0: the target was log1p(y/unit)
}

// Apply maps a raw output; a nil transform is the identity.
func (o *OutputTransform) Apply(r float64) float64 {
	if o == nil {
		return r
	}
	y := o.Shift + o.Scale*r
	if o.Expm1Unit > 0 {
		y = math.Expm1(y) * o.Expm1Unit
	}
	return y
}

// Model is one trained predictor: one number per feature vector. For
// Regression it is the predicted target; for Classification the probability
// of the positive class.
type Model interface {
	// Meta returns the model's metadata.
	Meta() Meta
	// Predict returns the output for one feature vector of the model's schema.
	Predict(features []float64) (float64, error)
	// PredictBatch fills out[i] with the output for rows[i].
	PredictBatch(rows [][]float64, out []float64) error
	// SaveFiles writes the model file(s) into dir (which exists); meta.json is written by Save.
	SaveFiles(dir string) error
}

// Regressor is a Model whose Task is Regression (predicted signed gap, seconds).
type Regressor = Model

// Classifier is a Model whose Task is Classification (probability that submitting now is safe).
type Classifier = Model

// Errors for expected conditions.
var (
	// ErrFeatureCount: a feature vector has the wrong length for the model's schema.
	ErrFeatureCount = errors.New("wrong number of features")
	// ErrUnknownKind: meta.json names a kind this build cannot load.
	ErrUnknownKind = errors.New("unknown model kind")
	// ErrBadModel: a model file is malformed.
	ErrBadModel = errors.New("malformed model")
)

// CheckLen verifies one feature vector against a schema width (no check when width is 0).
func CheckLen(features []float64, width int) error {
	if width > 0 && len(features) != width {
		return fmt.Errorf("%w: got %d, schema has %d", ErrFeatureCount, len(features), width)
	}
	return nil
}

// MetaFile is the metadata file name inside a model directory.
const MetaFile = "meta.json"

// Save writes m into dir (created if needed): its model file(s) and meta.json.
func Save(dir string, m Model) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := m.SaveFiles(dir); err != nil {
		return fmt.Errorf("save model %s: %w", dir, err)
	}
	meta := m.Meta()
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return fmt.Errorf("save model: meta: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MetaFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	return nil
}

// Limits on what a model directory's files may hold: a model is read only
// from files of the user's own (see OpenFile), and never without bound.
const (
	// MaxMetaSize caps meta.json (a trained model's is a few KB).
	MaxMetaSize = 1 << 20
	// MaxModelFile caps one model file (an XGBoost policy of 200 trees
	// is about 300 KB, the models mirage trains stay within a few MB).
	MaxModelFile = 256 << 20
)

// modelFix is what to do about a model file or directory refused as not
// the user's own.
const modelFix = "models are read only from files and directories of your own that nobody else may write: " +
	"retrain the model with mirage train, or give it your own copy (cp -r) with chmod go-w"

// CheckDir refuses a model directory (safefile.CheckDir, wrapping
// safefile.ErrNotOwned) unless the user owns it, nobody else may write
// it, and no directory above it lets another user replace it.
func CheckDir(dir string) error {
	return safefile.CheckDir(dir, "model directory", modelFix)
}

// OpenFile opens file name of the model directory dir for a Loader: only a
// regular file (no link, no device) the user owns that nobody else may
// write (else an error wrapping safefile.ErrNotOwned), of at most
// MaxModelFile bytes (safefile.ErrTooLarge), read through that limit.
func OpenFile(dir, name string) (io.ReadCloser, error) {
	return safefile.OpenPrivate(filepath.Join(dir, name), MaxModelFile, modelFix)
}

// ReadFile reads file name of the model directory dir as OpenFile opens it.
func ReadFile(dir, name string) ([]byte, error) {
	return safefile.ReadPrivate(filepath.Join(dir, name), MaxModelFile, modelFix)
}

// ReadMeta reads a model directory's meta.json, after CheckDir, as a
// private file of at most MaxMetaSize bytes.
func ReadMeta(dir string) (Meta, error) {
	var meta Meta
	if err := CheckDir(dir); err != nil {
		return meta, fmt.Errorf("read model meta: %w", err)
	}
	b, err := safefile.ReadPrivate(filepath.Join(dir, MetaFile), MaxMetaSize, modelFix)
	if err != nil {
		return meta, fmt.Errorf("read model meta: %w", err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return meta, fmt.Errorf("read model meta %s: %w: %v", dir, ErrBadModel, err)
	}
	return meta, nil
}

// MetaSetter is implemented by the models of the learner packages, so
// training can record the decision rule and metrics after the fit.
type MetaSetter interface{ SetMeta(Meta) }

// UpdateMeta applies f to a copy of m's metadata and stores it back in m,
// which must implement MetaSetter.
func UpdateMeta(m Model, f func(*Meta)) error {
	s, ok := m.(MetaSetter)
	if !ok {
		return fmt.Errorf("model %T cannot record metadata", m)
	}
	meta := m.Meta()
	f(&meta)
	s.SetMeta(meta)
	return nil
}

// Loader reads a model of one kind from its directory, given its meta.json.
type Loader func(dir string, meta Meta) (Model, error)

var (
	loadersMu sync.RWMutex
	loaders   = map[Kind]Loader{}
)

// RegisterLoader makes Load able to read models of a kind. The learner
// packages (models/xgb, models/forest, models/nn) register their kinds in
// init; import models/learners to have them all.
func RegisterLoader(kind Kind, l Loader) {
	loadersMu.Lock()
	defer loadersMu.Unlock()
	loaders[kind] = l
}

// LoaderKinds lists the kinds Load can read in this build, sorted.
func LoaderKinds() []Kind {
	loadersMu.RLock()
	defer loadersMu.RUnlock()
	var ks []Kind
	for k := range loaders {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// Load reads the model in dir and checks that it was trained on the schema
// want (a *SchemaMismatchError otherwise, before the model file is read).
func Load(dir string, want features.SchemaID) (Model, error) {
	meta, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	if err := features.CheckSchema(meta.Schema, want); err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	loadersMu.RLock()
	l, ok := loaders[meta.Kind]
	loadersMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("load model %s: %w %q (known: %v)", dir, ErrUnknownKind, meta.Kind, LoaderKinds())
	}
	m, err := l(dir, meta)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	return m, nil
}

// LibraryVersions returns the versions of the Go modules behind the models
// (leaves, golearn, gorgonia, tensor) and the Go runtime, for meta.json.
func LibraryVersions() map[string]string {
	out := map[string]string{"go": runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/dmitryikh/leaves", "github.com/sjwhitworth/golearn", "gorgonia.org/gorgonia", "gorgonia.org/tensor":
			out[d.Path] = d.Version
		}
	}
	return out
}

// Dataset is a dense design matrix with one target per row.
type Dataset struct {
	Schema features.SchemaID // feature schema of the rows
	X      [][]float64       // rows × features
	Y      []float64         // targets: signed gap in seconds (regression) or 0/1 (classification)
}

// Validate checks shapes: equal row count, equal widths matching the schema.
func (d *Dataset) Validate() error {
	if len(d.X) == 0 {
		return errors.New("dataset: no rows")
	}
	if len(d.X) != len(d.Y) {
		return fmt.Errorf("dataset: %d rows but %d targets", len(d.X), len(d.Y))
	}
	w := len(d.X[0])
	if n := len(d.Schema.Fields); n > 0 && n != w {
		return fmt.Errorf("dataset: rows have %d features, schema %s v%d has %d", w, d.Schema.Name, d.Schema.Version, n)
	}
	for i, r := range d.X {
		if len(r) != w {
			return fmt.Errorf("dataset: row %d has %d features, want %d", i, len(r), w)
		}
	}
	return nil
}

// Width is the number of features per row.
func (d *Dataset) Width() int {
	if len(d.X) == 0 {
		return len(d.Schema.Fields)
	}
	return len(d.X[0])
}

// SafeLabels turns signed gaps (seconds) into the classification target: 1
// when gap ≥ SafeGapThreshold ("submitting now is safe"), else 0.
func SafeLabels(gaps []float64) []float64 {
	out := make([]float64, len(gaps))
	th := SafeGapThreshold.Seconds()
	for i, g := range gaps {
		if g >= th {
			out[i] = 1
		}
	}
	return out
}

// PredictEach is PredictBatch for a model that predicts one row at a time:
// out[i] = predict(rows[i]), the first error naming its row.
func PredictEach(predict func([]float64) (float64, error), rows [][]float64, out []float64) error {
	if len(out) < len(rows) {
		return fmt.Errorf("predict batch: out has %d slots for %d rows", len(out), len(rows))
	}
	for i, r := range rows {
		v, err := predict(r)
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		out[i] = v
	}
	return nil
}
