package nn

import (
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mirage-gpu/mirage/models"
)

// PolicyNetFile is the model file name in a dqn or pg directory (gob: scaler + network).
const PolicyNetFile = "policy.gob"

// PolicyNetModel serves a learned dqn or pg network as a Model of Task
// Preference: Predict returns output[ActionSubmit] − output[ActionWait]
// (Q-values for dqn, logits for pg), so ≥ 0 is the greedy choice to submit.
type PolicyNetModel struct {
	meta models.Meta
	Net  *MLP    // two outputs: ActionWait, ActionSubmit
	In   *Scaler // input standardisation used in training, or nil
}

// NewPolicyNetModel wraps a trained network (e.g. DQN.Network() or
// PG.Network()) with the scaler it was trained with; meta.Kind must be
// KindDQN or KindPG and meta.Schema the features' schema.
func NewPolicyNetModel(net *MLP, in *Scaler, meta models.Meta) (*PolicyNetModel, error) {
	if meta.Kind != models.KindDQN && meta.Kind != models.KindPG {
		return nil, fmt.Errorf("policy network: kind %q, want %s or %s", meta.Kind, models.KindDQN, models.KindPG)
	}
	if net.cfg.Outputs != 2 {
		return nil, fmt.Errorf("policy network: %d outputs, want 2 (wait, submit)", net.cfg.Outputs)
	}
	if n := len(meta.Schema.Fields); n > 0 && n != net.cfg.Inputs {
		return nil, fmt.Errorf("policy network: %d inputs, schema has %d", net.cfg.Inputs, n)
	}
	if in != nil && len(in.Mean) != net.cfg.Inputs {
		return nil, fmt.Errorf("policy network: scaler has %d features, want %d", len(in.Mean), net.cfg.Inputs)
	}
	meta.Task, meta.ModelFile = models.Preference, PolicyNetFile
	if meta.Libraries == nil {
		meta.Libraries = models.LibraryVersions()
	}
	return &PolicyNetModel{meta: meta, Net: net.Clone(), In: in}, nil
}

// Meta implements Model.
func (m *PolicyNetModel) Meta() models.Meta { return m.meta }

// SetMeta implements models.MetaSetter (training records its rule and metrics).
func (m *PolicyNetModel) SetMeta(meta models.Meta) { m.meta = meta }

// Predict implements Model: the preference for submitting now.
func (m *PolicyNetModel) Predict(features []float64) (float64, error) {
	if err := models.CheckLen(features, m.Net.cfg.Inputs); err != nil {
		return 0, err
	}
	x := features
	var xb [128]float64
	if m.In != nil {
		x = m.In.Apply(features, xb[:0])
	}
	var ob [2]float64
	out, err := m.Net.Forward(x, ob[:0])
	if err != nil {
		return 0, err
	}
	return out[ActionSubmit] - out[ActionWait], nil
}

// PredictBatch implements Model.
func (m *PolicyNetModel) PredictBatch(rows [][]float64, out []float64) error {
	return models.PredictEach(m.Predict, rows, out)
}

// policyNetFile is the gob layout of policy.gob.
type policyNetFile struct {
	In  *Scaler
	Net mlpFile
}

// SaveFiles implements Model.
func (m *PolicyNetModel) SaveFiles(dir string) error {
	f, err := os.Create(filepath.Join(dir, PolicyNetFile))
	if err != nil {
		return err
	}
	err = gob.NewEncoder(f).Encode(policyNetFile{In: m.In, Net: mlpFile{Config: m.Net.cfg, Shapes: m.Net.shapes, Weights: m.Net.weights}})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func loadPolicyNet(dir string, meta models.Meta) (models.Model, error) {
	f, err := models.OpenFile(dir, PolicyNetFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pf policyNetFile
	if err := gob.NewDecoder(f).Decode(&pf); err != nil {
		return nil, fmt.Errorf("%w: %v", models.ErrBadModel, err)
	}
	net, err := mlpFromFile(pf.Net)
	if err != nil {
		return nil, err
	}
	if net.cfg.Outputs != 2 || (pf.In != nil && (len(pf.In.Mean) != net.cfg.Inputs || len(pf.In.Std) != net.cfg.Inputs)) {
		return nil, fmt.Errorf("%w: inconsistent policy network file", models.ErrBadModel)
	}
	return &PolicyNetModel{meta: meta, Net: net, In: pf.In}, nil
}

func init() {
	models.RegisterLoader(models.KindDQN, loadPolicyNet)
	models.RegisterLoader(models.KindPG, loadPolicyNet)
}
