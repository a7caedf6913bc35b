package nn

import (
	"encoding/gob"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
)

// savePolicyNet saves a valid dqn model (inputs: the features' width,
// hidden [4], 2 outputs) in dir and returns the width.
func savePolicyNet(t *testing.T, dir string) int {
	t.Helper()
	n := features.NumFeatures()
	net, err := NewMLP(MLPConfig{Inputs: n, Hidden: []int{4}, Outputs: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewPolicyNetModel(net, nil, models.Meta{Kind: models.KindDQN, Schema: features.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	if err := models.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	return n
}

// plantNet replaces dir's policy.gob with a network of the given shapes
// (weights of the lengths given, all 0.5).
func plantNet(t *testing.T, dir string, cfg MLPConfig, shapes [][2]int, lens []int) {
	t.Helper()
	w := make([][]float64, len(lens))
	for i, n := range lens {
		w[i] = make([]float64, n)
		for j := range w[i] {
			w[i][j] = 0.5
		}
	}
	f, err := os.Create(filepath.Join(dir, PolicyNetFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gob.NewEncoder(f).Encode(policyNetFile{Net: mlpFile{Config: cfg, Shapes: shapes, Weights: w}}); err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefusesInconsistentShapes (#50): networks whose shapes passed the
// loader's old checks (each tensor's length the product of its shape, each
// weight matrix as wide as the bias before it) but disagree with one
// another or with the configuration are refused as ErrBadModel. The first
// one, a bias of 8 values after a layer of 4 outputs followed by an 8-row
// matrix, loaded before and then panicked in Forward (index 4 of the
// 4-value hidden buffer), which stopped the daemon every cycle.
func TestLoadRefusesInconsistentShapes(t *testing.T) {
	good := filepath.Join(t.TempDir(), "dqn")
	n := savePolicyNet(t, good)
	m, err := models.Load(good, features.Schema())
	if err != nil {
		t.Fatalf("a valid model: %v", err)
	}
	if _, err := m.Predict(make([]float64, n)); err != nil {
		t.Fatalf("a valid model predicts: %v", err)
	}
	cfg := MLPConfig{Inputs: n, Hidden: []int{4}, Outputs: 2}
	cases := []struct {
		name   string
		cfg    MLPConfig
		shapes [][2]int
		lens   []int
		want   string
	}{
		{"bias wider than its layer", cfg, [][2]int{{n, 4}, {1, 8}, {8, 2}, {1, 2}}, []int{4 * n, 8, 16, 2}, "layer 0 has shapes"},
		{"bias of two rows", cfg, [][2]int{{n, 4}, {2, 2}, {2, 2}, {1, 2}}, []int{4 * n, 4, 4, 2}, "layer 0 has shapes"},
		{"hidden widths disagree", MLPConfig{Inputs: n, Hidden: []int{5}, Outputs: 2}, [][2]int{{n, 4}, {1, 4}, {4, 2}, {1, 2}}, []int{4 * n, 4, 8, 2}, "layer 0 has shapes"},
		{"a layer too many", cfg, [][2]int{{n, 4}, {1, 4}, {4, 4}, {1, 4}, {4, 2}, {1, 2}}, []int{4 * n, 4, 16, 4, 8, 2}, "3 layers for inputs"},
		{"weights shorter than the shape", cfg, [][2]int{{n, 4}, {1, 4}, {4, 2}, {1, 2}}, []int{4 * n, 4, 7, 2}, "layer 1 holds 7 weights"},
		{"negative widths", MLPConfig{Inputs: n, Hidden: []int{-4}, Outputs: 2}, [][2]int{{n, -4}, {1, -4}, {-4, 2}, {1, 2}}, []int{4 * n, 4, 8, 2}, "layer 0 has shapes"},
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "dqn")
		savePolicyNet(t, dir)
		plantNet(t, dir, c.cfg, c.shapes, c.lens)
		_, err := models.Load(dir, features.Schema())
		if !errors.Is(err, models.ErrBadModel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load = %v, want ErrBadModel saying %q", c.name, err, c.want)
		}
	}
}

// TestLoadRefusesPlantedFiles (#50): a model file or meta.json that is a
// link (meta.json to /dev/zero read 1.2 GB before), a model directory
// others may write, and a model file larger than MaxModelFile are refused
// before they are decoded.
func TestLoadRefusesPlantedFiles(t *testing.T) {
	plant := func(t *testing.T, f func(dir string)) string {
		dir := filepath.Join(t.TempDir(), "dqn")
		savePolicyNet(t, dir)
		f(dir)
		return dir
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		dir  string
		is   error
		want string
	}{
		"meta.json a link to /dev/zero": {plant(t, func(d string) {
			must(os.Remove(filepath.Join(d, models.MetaFile)))
			must(os.Symlink("/dev/zero", filepath.Join(d, models.MetaFile)))
		}), safefile.ErrNotOwned, "meta.json is a symbolic link"},
		"policy.gob a link to /dev/zero": {plant(t, func(d string) {
			must(os.Remove(filepath.Join(d, PolicyNetFile)))
			must(os.Symlink("/dev/zero", filepath.Join(d, PolicyNetFile)))
		}), safefile.ErrNotOwned, "policy.gob is a symbolic link"},
		"policy.gob writable by others": {plant(t, func(d string) {
			must(os.Chmod(filepath.Join(d, PolicyNetFile), 0o666))
		}), safefile.ErrNotOwned, "may be written by group or others (mode 0666)"},
		"model directory writable by the group": {plant(t, func(d string) {
			must(os.Chmod(d, 0o775))
		}), safefile.ErrNotOwned, "model directory"},
		"policy.gob past the limit": {plant(t, func(d string) {
			must(os.Truncate(filepath.Join(d, PolicyNetFile), models.MaxModelFile+1))
		}), safefile.ErrTooLarge, "policy.gob has 268435457 bytes"},
	}
	for name, c := range cases {
		_, err := models.Load(c.dir, features.Schema())
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load = %v, want %v saying %q", name, err, c.is, c.want)
		}
	}
}
