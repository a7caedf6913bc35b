//go:build cgo

// Training golearn's forest needs cgo: golearn's ensemble package pulls in
// linear_models (liblinear, C++). Serving (rf_golearn.go) does not.

package forest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sjwhitworth/golearn/base"
	"github.com/sjwhitworth/golearn/ensemble"
	"github.com/sjwhitworth/golearn/trees"

	"github.com/mirage-gpu/mirage/models"
)

// rfAttrName names column j for golearn.
func rfAttrName(j int) string { return "f" + strconv.Itoa(j) }

// TrainRFGolearn fits golearn's RandomForest on ds (Y must be 0/1) and flattens it.
func TrainRFGolearn(ds *models.Dataset, p GolearnRFParams, meta models.Meta) (*RFGolearnModel, error) {
	if err := ds.Validate(); err != nil {
		return nil, err
	}
	w := ds.Width()
	if p.Trees == 0 {
		p.Trees = 50
	}
	if p.FeaturesPerTree == 0 {
		p.FeaturesPerTree = (w + 1) / 2
	}
	if p.FeaturesPerTree > w {
		p.FeaturesPerTree = w
	}
	for i, y := range ds.Y {
		if y != 0 && y != 1 {
			return nil, fmt.Errorf("rf-golearn: label %v at row %d is not 0/1", y, i)
		}
	}
	start := time.Now() // wall time of the fit, recorded in meta.json only
	inst, err := golearnInstances(ds)
	if err != nil {
		return nil, err
	}
	rf := ensemble.NewRandomForest(p.Trees, p.FeaturesPerTree)
	if err := rf.Fit(inst); err != nil {
		return nil, fmt.Errorf("rf-golearn: fit: %w", err)
	}
	m := &RFGolearnModel{width: w}
	for i, c := range rf.Model.Models {
		t, ok := c.(*trees.ID3DecisionTree)
		if !ok || t.Root == nil {
			return nil, fmt.Errorf("rf-golearn: tree %d is %T", i, c)
		}
		var nodes []flatNode
		if _, err := flatten(t.Root, &nodes); err != nil {
			return nil, fmt.Errorf("rf-golearn: tree %d: %w", i, err)
		}
		m.trees = append(m.trees, nodes)
	}
	meta.Kind, meta.Task, meta.ModelFile, meta.Schema = models.KindRFGolearn, models.Classification, RFGolearnModelFile, ds.Schema
	meta.TrainRows = len(ds.X)
	meta.TrainSeconds = time.Since(start).Seconds()
	meta.Libraries = models.LibraryVersions()
	meta.Params = map[string]string{"trees": strconv.Itoa(p.Trees), "features_per_tree": strconv.Itoa(p.FeaturesPerTree),
		"label": "gap >= " + models.SafeGapThreshold.String()}
	m.meta = meta
	return m, nil
}

// golearnInstances builds golearn's DenseInstances: float columns f0… and a categorical class "0"/"1".
func golearnInstances(ds *models.Dataset) (*base.DenseInstances, error) {
	w := ds.Width()
	inst := base.NewDenseInstances()
	specs := make([]base.AttributeSpec, w)
	for j := 0; j < w; j++ {
		specs[j] = inst.AddAttribute(base.NewFloatAttribute(rfAttrName(j)))
	}
	cls := base.NewCategoricalAttribute()
	cls.SetName("safe")
	cls.GetSysValFromString("0")
	cls.GetSysValFromString("1")
	cspec := inst.AddAttribute(cls)
	if err := inst.AddClassAttribute(cls); err != nil {
		return nil, fmt.Errorf("rf-golearn: %w", err)
	}
	if err := inst.Extend(len(ds.X)); err != nil {
		return nil, fmt.Errorf("rf-golearn: %w", err)
	}
	zero, one := cls.GetSysValFromString("0"), cls.GetSysValFromString("1")
	for i, row := range ds.X {
		for j, v := range row {
			inst.Set(specs[j], i, base.PackFloatToBytes(v))
		}
		if ds.Y[i] == 1 {
			inst.Set(cspec, i, one)
		} else {
			inst.Set(cspec, i, zero)
		}
	}
	return inst, nil
}

// flatten appends n's subtree to nodes in pre-order and returns n's index.
func flatten(n *trees.DecisionTreeNode, nodes *[]flatNode) (int32, error) {
	idx := int32(len(*nodes))
	tot := 0
	for _, c := range n.ClassDist {
		tot += c
	}
	p1 := 0.0
	if tot > 0 {
		p1 = float64(n.ClassDist["1"]) / float64(tot)
	} else if n.Class == "1" {
		p1 = 1
	}
	*nodes = append(*nodes, flatNode{Feature: -1, P1: p1, Vote1: n.Class == "1"})
	if n.Children == nil || n.SplitRule == nil || n.SplitRule.SplitAttr == nil {
		return idx, nil
	}
	name := n.SplitRule.SplitAttr.GetName()
	if len(name) < 2 || name[0] != 'f' {
		return 0, fmt.Errorf("unexpected split attribute %q", name)
	}
	j, err := strconv.Atoi(name[1:])
	if err != nil {
		return 0, fmt.Errorf("unexpected split attribute %q", name)
	}
	if _, ok := n.SplitRule.SplitAttr.(*base.FloatAttribute); !ok {
		return 0, fmt.Errorf("split on non-float attribute %q", name)
	}
	left, right := n.Children["0"], n.Children["1"]
	// golearn sends a value to the only child present when one side of a split is empty.
	if left == nil {
		left = right
	}
	if right == nil {
		right = left
	}
	if left == nil {
		return idx, nil
	}
	li, err := flatten(left, nodes)
	if err != nil {
		return 0, err
	}
	ri := li
	if right != left {
		if ri, err = flatten(right, nodes); err != nil {
			return 0, err
		}
	}
	(*nodes)[idx].Feature, (*nodes)[idx].Threshold = int32(j), n.SplitRule.SplitVal
	(*nodes)[idx].Left, (*nodes)[idx].Right = li, ri
	return idx, nil
}
