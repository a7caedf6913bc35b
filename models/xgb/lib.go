//go:build xgboost

package xgb

/*
#cgo LDFLAGS: -lxgboost
#include <stdlib.h>
#include <xgboost/c_api.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"unsafe"
)

// xgbErr turns a non-zero libxgboost return code into an error with XGBGetLastError.
func xgbErr(rc C.int, what string) error {
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("libxgboost: %s: %s", what, C.GoString(C.XGBGetLastError()))
}

// CanTrain reports whether this build links libxgboost (TrainXGB works).
const CanTrain = true

// LibXGBoostVersion is the version of the linked libxgboost ("1.7.4").
func LibXGBoostVersion() string {
	var major, minor, patch C.int
	C.XGBoostVersion(&major, &minor, &patch)
	return fmt.Sprintf("%d.%d.%d", int(major), int(minor), int(patch))
}

// Booster is a libxgboost booster handle (training and reference predictions). Close it.
type Booster struct {
	h C.BoosterHandle
}

// dmatrix builds a DMatrix from rows (converted to dense float32) and optional labels.
func dmatrix(rows [][]float64, labels []float64) (C.DMatrixHandle, error) {
	runtime.LockOSThread() // XGBGetLastError is thread-local
	defer runtime.UnlockOSThread()
	if len(rows) == 0 {
		return nil, errors.New("xgboost: no rows")
	}
	nc := len(rows[0])
	data := make([]float32, 0, len(rows)*nc)
	for i, r := range rows {
		if len(r) != nc {
			return nil, fmt.Errorf("xgboost: row %d has %d features, want %d", i, len(r), nc)
		}
		for _, v := range r {
			data = append(data, float32(v))
		}
	}
	var h C.DMatrixHandle
	rc := C.XGDMatrixCreateFromMat((*C.float)(unsafe.Pointer(&data[0])), C.bst_ulong(len(rows)), C.bst_ulong(nc), C.float(math.NaN()), &h)
	runtime.KeepAlive(data)
	if err := xgbErr(rc, "XGDMatrixCreateFromMat"); err != nil {
		return nil, err
	}
	if labels != nil {
		lab := make([]float32, len(labels))
		for i, v := range labels {
			lab[i] = float32(v)
		}
		field := C.CString("label")
		defer C.free(unsafe.Pointer(field))
		rc = C.XGDMatrixSetFloatInfo(h, field, (*C.float)(unsafe.Pointer(&lab[0])), C.bst_ulong(len(lab)))
		runtime.KeepAlive(lab)
		if err := xgbErr(rc, "XGDMatrixSetFloatInfo"); err != nil {
			C.XGDMatrixFree(h)
			return nil, err
		}
	}
	return h, nil
}

// TrainBooster trains a booster on X, y with p through libxgboost's C API.
func TrainBooster(X [][]float64, y []float64, p XGBParams) (*Booster, error) {
	runtime.LockOSThread() // XGBGetLastError is thread-local
	defer runtime.UnlockOSThread()
	if len(X) != len(y) {
		return nil, fmt.Errorf("xgboost: %d rows, %d labels", len(X), len(y))
	}
	dm, err := dmatrix(X, y)
	if err != nil {
		return nil, err
	}
	defer C.XGDMatrixFree(dm)
	b := &Booster{}
	mats := []C.DMatrixHandle{dm}
	if err := xgbErr(C.XGBoosterCreate(&mats[0], 1, &b.h), "XGBoosterCreate"); err != nil {
		return nil, err
	}
	for _, kv := range p.libParams() {
		if err := b.setParam(kv[0], kv[1]); err != nil {
			b.Close()
			return nil, err
		}
	}
	if p.Quantile > 0 {
		if err := b.boostQuantile(dm, y, p); err != nil {
			b.Close()
			return nil, err
		}
		return b, nil
	}
	for it := 0; it < p.rounds(); it++ {
		if err := xgbErr(C.XGBoosterUpdateOneIter(b.h, C.int(it), dm), "XGBoosterUpdateOneIter"); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// boostQuantile runs p.Rounds rounds of the pinball loss for quantile
// p.Quantile through custom gradients (libxgboost 1.7 has no quantile
// objective): gradient −α where the label is above the margin, 1−α below,
// constant hessian 1.
func (b *Booster) boostQuantile(dm C.DMatrixHandle, y []float64, p XGBParams) error {
	n := len(y)
	grad := make([]float32, n)
	hess := make([]float32, n)
	for i := range hess {
		hess[i] = 1
	}
	for it := 0; it < p.rounds(); it++ {
		var ln C.bst_ulong
		var out *C.float
		// option_mask 1: output margin; training 1: the prediction used for gradients.
		if err := xgbErr(C.XGBoosterPredict(b.h, dm, 1, 0, 1, &ln, &out), "XGBoosterPredict"); err != nil {
			return err
		}
		margin := unsafe.Slice((*float32)(unsafe.Pointer(out)), int(ln))
		if len(margin) != n {
			return fmt.Errorf("xgboost: %d margins for %d rows", len(margin), n)
		}
		for i := range y {
			if float32(y[i]) > margin[i] {
				grad[i] = float32(-p.Quantile)
			} else {
				grad[i] = float32(1 - p.Quantile)
			}
		}
		rc := C.XGBoosterBoostOneIter(b.h, dm, (*C.float)(unsafe.Pointer(&grad[0])), (*C.float)(unsafe.Pointer(&hess[0])), C.bst_ulong(n))
		runtime.KeepAlive(grad)
		runtime.KeepAlive(hess)
		if err := xgbErr(rc, "XGBoosterBoostOneIter"); err != nil {
			return err
		}
	}
	return nil
}

func (b *Booster) setParam(k, v string) error {
	runtime.LockOSThread() // XGBGetLastError is thread-local
	defer runtime.UnlockOSThread()
	ck, cv := C.CString(k), C.CString(v)
	defer C.free(unsafe.Pointer(ck))
	defer C.free(unsafe.Pointer(cv))
	return xgbErr(C.XGBoosterSetParam(b.h, ck, cv), "XGBoosterSetParam "+k+"="+v)
}

// Close frees the booster.
func (b *Booster) Close() {
	if b.h != nil {
		C.XGBoosterFree(b.h)
		b.h = nil
	}
}

// Predict returns libxgboost's predictions (after the objective's transformation) for rows.
func (b *Booster) Predict(rows [][]float64) ([]float64, error) {
	runtime.LockOSThread() // XGBGetLastError is thread-local
	defer runtime.UnlockOSThread()
	dm, err := dmatrix(rows, nil)
	if err != nil {
		return nil, err
	}
	defer C.XGDMatrixFree(dm)
	var n C.bst_ulong
	var out *C.float
	if err := xgbErr(C.XGBoosterPredict(b.h, dm, 0, 0, 0, &n, &out), "XGBoosterPredict"); err != nil {
		return nil, err
	}
	res := unsafe.Slice((*float32)(unsafe.Pointer(out)), int(n))
	pred := make([]float64, len(res))
	for i, v := range res {
		pred[i] = float64(v)
	}
	return pred, nil
}

// SaveRaw returns the model in XGBoost 1.7's deprecated binary format (the
// only one leaves understands, after ConvertXGB17ForLeaves).
func (b *Booster) SaveRaw() ([]byte, error) {
	runtime.LockOSThread() // XGBGetLastError is thread-local
	defer runtime.UnlockOSThread()
	cfg := C.CString(`{"format": "deprecated"}`)
	defer C.free(unsafe.Pointer(cfg))
	var n C.bst_ulong
	var out *C.char
	if err := xgbErr(C.XGBoosterSaveModelToBuffer(b.h, cfg, &n, &out), "XGBoosterSaveModelToBuffer"); err != nil {
		return nil, err
	}
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}

// LoadBooster reads a model saved by SaveRaw back into libxgboost.
func LoadBooster(raw []byte) (*Booster, error) {
	runtime.LockOSThread() // XGBGetLastError is thread-local
	defer runtime.UnlockOSThread()
	b := &Booster{}
	if err := xgbErr(C.XGBoosterCreate(nil, 0, &b.h), "XGBoosterCreate"); err != nil {
		return nil, err
	}
	rc := C.XGBoosterLoadModelFromBuffer(b.h, unsafe.Pointer(&raw[0]), C.bst_ulong(len(raw)))
	runtime.KeepAlive(raw)
	if err := xgbErr(rc, "XGBoosterLoadModelFromBuffer"); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// libParams lists the libxgboost parameters for p.
func (p XGBParams) libParams() [][2]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	kv := [][2]string{
		{"objective", p.Objective},
		{"max_depth", strconv.Itoa(p.MaxDepth)},
		{"eta", f(p.Eta)},
		{"subsample", f(p.Subsample)},
		{"colsample_bynode", f(p.ColsampleByNode)},
		{"min_child_weight", f(p.MinChildWeight)},
		{"seed", strconv.FormatUint(p.Seed%(1<<31), 10)},
		{"nthread", strconv.Itoa(p.Threads)},
		{"tree_method", p.TreeMethod},
		{"verbosity", "0"},
	}
	if p.Quantile > 0 {
		// Custom gradients; the objective only fixes the (identity) output and base_score 0.
		kv[0] = [2]string{"objective", "reg:squarederror"}
		kv = append(kv, [2]string{"base_score", "0"})
	}
	if p.NumParallelTree > 1 {
		kv = append(kv, [2]string{"num_parallel_tree", strconv.Itoa(p.NumParallelTree)})
	}
	return kv
}

func (p XGBParams) rounds() int { return p.Rounds }
