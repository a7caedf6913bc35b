package forest

import (
	"encoding/gob"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/mirage-gpu/mirage/models"
)

// RFGolearnModelFile is the model file name in an rf-golearn directory (gob of the flattened forest).
const RFGolearnModelFile = "forest.gob"

// GolearnRFParams configure golearn's RandomForest.
type GolearnRFParams struct {
	Trees           int // trees in the forest (default 50)
	FeaturesPerTree int // features drawn once per tree (golearn does not draw per split); default ⌈width/2⌉
}

// RFGolearnModel is golearn's random forest, fitted by golearn and then
// flattened into plain arrays: prediction walks the same splits golearn
// would (x > threshold goes to child "1"), with no DataGrid per call, and
// the file is a gob of those arrays.
//
// Predict returns the mean over trees of the leaf's share of the positive
// class in its training sample (a probability, as scikit-learn's
// predict_proba), not golearn's majority vote; thresholded at 0.5 the two
// agree except on near ties.
//
// Caveat: golearn draws its bootstrap samples and feature subsets from
// math/rand's global source, which Go ≥ 1.24 seeds randomly and cannot be
// reseeded; two fits on the same data give different forests (meta.json
// records the seed of the run, but it does not reproduce this model).
type RFGolearnModel struct {
	meta  models.Meta
	width int
	trees [][]flatNode
}

// flatNode is one node of a flattened ID3 tree.
type flatNode struct {
	Feature   int32   // split feature, −1 for a leaf
	Threshold float64 // x ≤ Threshold goes Left ("0"), else Right ("1")
	Left      int32   // child index
	Right     int32   // child index
	P1        float64 // share of the positive class at this node
	Vote1     bool    // golearn's own class at this node is the positive one (its choice on a tied share)
}

// Meta implements Model.
func (m *RFGolearnModel) Meta() models.Meta { return m.meta }

// SetMeta implements models.MetaSetter (training records its rule and metrics).
func (m *RFGolearnModel) SetMeta(meta models.Meta) { m.meta = meta }

// leaf returns the leaf tree t reaches for x.
func (m *RFGolearnModel) leaf(t []flatNode, x []float64) *flatNode {
	n := &t[0]
	for n.Feature >= 0 {
		if x[n.Feature] > n.Threshold {
			n = &t[n.Right]
		} else {
			n = &t[n.Left]
		}
	}
	return n
}

// Predict implements Model: the probability that submitting now is safe.
func (m *RFGolearnModel) Predict(features []float64) (float64, error) {
	if err := models.CheckLen(features, m.width); err != nil {
		return 0, err
	}
	s := 0.0
	for _, t := range m.trees {
		s += m.leaf(t, features).P1
	}
	return s / float64(len(m.trees)), nil
}

// Votes returns the share of trees whose leaf class is the positive one
// (golearn's own voting rule, ties at the leaf broken as golearn broke
// them, for comparison with its Predict).
func (m *RFGolearnModel) Votes(features []float64) float64 {
	v := 0
	for _, t := range m.trees {
		if m.leaf(t, features).Vote1 {
			v++
		}
	}
	return float64(v) / float64(len(m.trees))
}

// PredictBatch implements Model.
func (m *RFGolearnModel) PredictBatch(rows [][]float64, out []float64) error {
	return models.PredictEach(m.Predict, rows, out)
}

// rfFile is the gob layout of forest.gob.
type rfFile struct {
	Width int
	Trees [][]flatNode
}

// SaveFiles implements Model.
func (m *RFGolearnModel) SaveFiles(dir string) error {
	f, err := os.Create(filepath.Join(dir, RFGolearnModelFile))
	if err != nil {
		return err
	}
	err = gob.NewEncoder(f).Encode(rfFile{Width: m.width, Trees: m.trees})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func loadRFGolearn(dir string, meta models.Meta) (models.Model, error) {
	f, err := models.OpenFile(dir, RFGolearnModelFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rf rfFile
	if err := gob.NewDecoder(f).Decode(&rf); err != nil {
		return nil, fmt.Errorf("%w: %v", models.ErrBadModel, err)
	}
	if len(rf.Trees) == 0 {
		return nil, fmt.Errorf("%w: empty forest", models.ErrBadModel)
	}
	for ti, t := range rf.Trees {
		if len(t) == 0 {
			return nil, fmt.Errorf("%w: tree %d empty", models.ErrBadModel, ti)
		}
		for i, n := range t {
			if n.Feature >= int32(rf.Width) || (n.Feature >= 0 && (n.Left <= int32(i) || n.Right <= int32(i) || int(n.Left) >= len(t) || int(n.Right) >= len(t))) || math.IsNaN(n.P1) {
				return nil, fmt.Errorf("%w: tree %d malformed", models.ErrBadModel, ti)
			}
		}
	}
	return &RFGolearnModel{meta: meta, width: rf.Width, trees: rf.Trees}, nil
}

func init() { models.RegisterLoader(models.KindRFGolearn, loadRFGolearn) }
