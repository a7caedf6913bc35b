package xgb

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/mirage-gpu/mirage/models"
)

// Layout of XGBoost 1.7's deprecated binary model format, field by field as
// written by src/learner.cc (LearnerModelParamLegacy), src/gbm/gbtree_model.h
// (GBTreeModelParam) and include/xgboost/tree_model.h (TreeParam, Node,
// RTreeNodeStat); the same structs leaves mirrors in internal/xgbin.
const (
	xgbMagic = "binf" // written by 1.x before the header; leaves does not expect it

	learnerParamSize     = 136 // base_score f32, num_feature u32, num_class i32, contain_extra_attrs, contain_eval_metrics, major, minor, num_target, reserved[26]
	learnerBaseScoreOff  = 0
	learnerNumFeatureOff = 4
	learnerNumClassOff   = 8

	gbtreeParamSize         = 160 // num_trees, num_parallel_tree, num_feature, pad (i32 each), num_pbuffer i64, num_output_group, size_leaf_vector, reserved[32]
	gbtreeNumTreesOff       = 0
	gbtreeNumParallelOff    = 4
	gbtreeNumOutputGroupOff = 24

	treeParamSize          = 148 // num_roots, num_nodes, num_deleted, max_depth, num_feature, size_leaf_vector, reserved[31]
	treeNumRootsOff        = 0
	treeNumNodesOff        = 4
	treeSizeLeafVectorOff  = 20
	nodeSize               = 20 // parent, cleft, cright i32, sindex u32, info (leaf value or split threshold) f32
	nodeCLeftOff           = 4
	nodeCRightOff          = 8
	nodeSIndexOff          = 12
	nodeInfoOff            = 16
	nodeStatSize           = 16 // loss_chg, sum_hess, base_weight f32, leaf_child_cnt i32
	maxReasonableTreeCount = 1 << 24
)

// XGBHeader is what ConvertXGB17ForLeaves read from a model file.
type XGBHeader struct {
	Objective  string  // name_obj, e.g. "reg:squarederror"
	Booster    string  // name_gbm, "gbtree"
	NumFeature int     // features
	NumTrees   int     // trees in the file
	Parallel   int     // num_parallel_tree as stored
	BaseScore  float32 // as stored (a probability for logistic objectives)
}

// ConvertXGB17ForLeaves rewrites an XGBoost 1.7 binary model (saved with
// {"format":"deprecated"}) into the ≤0.90 layout github.com/dmitryikh/leaves
// reads, parsing every structure rather than patching guessed offsets:
//
//  1. the 4-byte "binf" magic is dropped (leaves would read it as base_score
//     and misalign everything after it);
//  2. GBTreeModelParam.num_output_group, written as 0 by 1.7 (the field is
//     deprecated there), becomes max(1, num_class) — leaves divides by it;
//  3. GBTreeModelParam.num_parallel_tree becomes 1 (leaves rejects other
//     values; libxgboost 1.7 already scales random-forest leaves by
//     eta/num_parallel_tree, so summing every tree is exact);
//  4. for logistic objectives base_score is stored as a probability where
//     leaves adds it as a margin: it becomes logit(base_score);
//  5. every split threshold t becomes the next float32 below t: XGBoost
//     sends x left when x < t, leaves when x ≤ t; for float32 inputs
//     x < t ⇔ x ≤ nextafter(t, −∞), so predictions agree exactly on ties
//     (integer features sitting on a hist cut). Callers must round inputs
//     to float32 before predicting, as libxgboost does.
//
// Only gbtree models with one output group are supported.
func ConvertXGB17ForLeaves(raw []byte) ([]byte, XGBHeader, error) {
	var hd XGBHeader
	b := raw
	if len(b) >= 4 && string(b[:4]) == xgbMagic {
		b = b[4:]
	}
	out := append([]byte(nil), b...)
	le := binary.LittleEndian
	pos := 0
	need := func(n int, what string) error {
		if n < 0 || pos+n > len(out) {
			return fmt.Errorf("%w: xgboost model truncated in %s at byte %d", models.ErrBadModel, what, pos)
		}
		return nil
	}
	readString := func(what string) (string, error) {
		if err := need(8, what); err != nil {
			return "", err
		}
		n := le.Uint64(out[pos:])
		pos += 8
		if n > uint64(len(out)) {
			return "", fmt.Errorf("%w: xgboost model: %s length %d", models.ErrBadModel, what, n)
		}
		if err := need(int(n), what); err != nil {
			return "", err
		}
		s := string(out[pos : pos+int(n)])
		pos += int(n)
		return s, nil
	}

	// Learner header.
	if err := need(learnerParamSize, "learner parameters"); err != nil {
		return nil, hd, err
	}
	lp := pos
	hd.BaseScore = math.Float32frombits(le.Uint32(out[lp+learnerBaseScoreOff:]))
	hd.NumFeature = int(le.Uint32(out[lp+learnerNumFeatureOff:]))
	numClass := int(int32(le.Uint32(out[lp+learnerNumClassOff:])))
	pos += learnerParamSize
	var err error
	if hd.Objective, err = readString("objective name"); err != nil {
		return nil, hd, err
	}
	if hd.Booster, err = readString("booster name"); err != nil {
		return nil, hd, err
	}
	if hd.Booster != "gbtree" {
		return nil, hd, fmt.Errorf("%w: booster %q (only gbtree is supported)", models.ErrBadModel, hd.Booster)
	}
	if numClass > 1 {
		return nil, hd, fmt.Errorf("%w: %d classes (only one output group is supported)", models.ErrBadModel, numClass)
	}
	switch hd.Objective {
	case "binary:logistic", "reg:logistic":
		p := float64(hd.BaseScore)
		if p <= 0 || p >= 1 {
			return nil, hd, fmt.Errorf("%w: logistic base_score %v outside (0,1)", models.ErrBadModel, p)
		}
		margin := float32(math.Log(p / (1 - p)))
		le.PutUint32(out[lp+learnerBaseScoreOff:], math.Float32bits(margin))
	case "reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror", "reg:absoluteerror", "binary:logitraw":
		// base_score is already a margin.
	default:
		return nil, hd, fmt.Errorf("%w: objective %q not supported for serving", models.ErrBadModel, hd.Objective)
	}

	// GBTree parameters.
	if err := need(gbtreeParamSize, "gbtree parameters"); err != nil {
		return nil, hd, err
	}
	gp := pos
	hd.NumTrees = int(int32(le.Uint32(out[gp+gbtreeNumTreesOff:])))
	hd.Parallel = int(int32(le.Uint32(out[gp+gbtreeNumParallelOff:])))
	if hd.NumTrees <= 0 || hd.NumTrees > maxReasonableTreeCount {
		return nil, hd, fmt.Errorf("%w: %d trees", models.ErrBadModel, hd.NumTrees)
	}
	le.PutUint32(out[gp+gbtreeNumParallelOff:], 1)
	if og := int32(le.Uint32(out[gp+gbtreeNumOutputGroupOff:])); og == 0 {
		le.PutUint32(out[gp+gbtreeNumOutputGroupOff:], 1)
	} else if og != 1 {
		return nil, hd, fmt.Errorf("%w: %d output groups", models.ErrBadModel, og)
	}
	pos += gbtreeParamSize

	// Trees.
	for t := 0; t < hd.NumTrees; t++ {
		if err := need(treeParamSize, fmt.Sprintf("tree %d parameters", t)); err != nil {
			return nil, hd, err
		}
		tp := pos
		if r := int32(le.Uint32(out[tp+treeNumRootsOff:])); r != 1 {
			return nil, hd, fmt.Errorf("%w: tree %d has %d roots", models.ErrBadModel, t, r)
		}
		nn := int(int32(le.Uint32(out[tp+treeNumNodesOff:])))
		slv := int32(le.Uint32(out[tp+treeSizeLeafVectorOff:]))
		pos += treeParamSize
		if nn <= 0 || nn > len(out)/nodeSize {
			return nil, hd, fmt.Errorf("%w: tree %d has %d nodes", models.ErrBadModel, t, nn)
		}
		if err := need(nn*(nodeSize+nodeStatSize), fmt.Sprintf("tree %d nodes", t)); err != nil {
			return nil, hd, err
		}
		for i := 0; i < nn; i++ {
			np := pos + i*nodeSize
			cl := int32(le.Uint32(out[np+nodeCLeftOff:]))
			if cl == -1 {
				continue // leaf: info is the leaf value
			}
			// leaves indexes children and features without bounds checks:
			// XGBoost allocates a node's children after it, and splits only
			// on the model's features.
			cr := int32(le.Uint32(out[np+nodeCRightOff:]))
			if int(cl) <= i || int(cl) >= nn || int(cr) <= i || int(cr) >= nn || cl == cr {
				return nil, hd, fmt.Errorf("%w: tree %d node %d has children %d and %d (want two distinct nodes after it, below %d)", models.ErrBadModel, t, i, cl, cr, nn)
			}
			if f := le.Uint32(out[np+nodeSIndexOff:]) & (1<<31 - 1); int(f) >= hd.NumFeature {
				return nil, hd, fmt.Errorf("%w: tree %d node %d splits on feature %d of %d", models.ErrBadModel, t, i, f, hd.NumFeature)
			}
			th := math.Float32frombits(le.Uint32(out[np+nodeInfoOff:]))
			le.PutUint32(out[np+nodeInfoOff:], math.Float32bits(math.Nextafter32(th, float32(math.Inf(-1)))))
		}
		pos += nn * (nodeSize + nodeStatSize)
		if slv > 0 {
			if err := need(8, "leaf vector"); err != nil {
				return nil, hd, err
			}
			n := le.Uint64(out[pos:])
			pos += 8
			if n > uint64(len(out)) {
				return nil, hd, fmt.Errorf("%w: tree %d leaf vector length %d", models.ErrBadModel, t, n)
			}
			if err := need(int(n)*4, "leaf vector"); err != nil {
				return nil, hd, err
			}
			pos += int(n) * 4
		}
	}
	// tree_info: one int32 per tree, no length prefix; must be all 0 for one output group.
	if err := need(4*hd.NumTrees, "tree info"); err != nil {
		return nil, hd, err
	}
	for t := 0; t < hd.NumTrees; t++ {
		if v := int32(le.Uint32(out[pos+4*t:])); v != 0 {
			return nil, hd, fmt.Errorf("%w: tree %d belongs to group %d", models.ErrBadModel, t, v)
		}
	}
	// The rest (attributes) is copied verbatim; leaves ignores it.
	return out, hd, nil
}
