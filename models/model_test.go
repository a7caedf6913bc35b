package models

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/models/features"
)

func TestSchemaMismatchMessage(t *testing.T) {
	err := features.CheckSchema(features.SchemaID{Name: "mirage-chain", Version: 1}, features.SchemaID{Name: "mirage-chain", Version: 2})
	if !errors.Is(err, features.ErrSchemaMismatch) {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []string{"mirage-chain v1", "mirage-chain v2"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q does not name %q", err, s)
		}
	}
	if err := features.CheckSchema(features.Schema(), features.Schema()); err != nil {
		t.Errorf("same schema: %v", err)
	}
	other := features.Schema()
	other.Fields[0] = "renamed"
	if err := features.CheckSchema(other, features.Schema()); !errors.Is(err, features.ErrSchemaMismatch) {
		t.Errorf("same version, other fields: err = %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir, features.Schema()); err == nil {
		t.Error("missing meta.json: no error")
	}
	os.WriteFile(filepath.Join(dir, MetaFile), []byte(`{"kind":"nope","schema":{"name":"mirage-chain","version":1}}`), 0o644)
	if _, err := Load(dir, features.SchemaID{Name: "mirage-chain", Version: 1}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: err = %v", err)
	}
	os.WriteFile(filepath.Join(dir, MetaFile), []byte(`{`), 0o644)
	if _, err := Load(dir, features.Schema()); !errors.Is(err, ErrBadModel) {
		t.Errorf("bad json: err = %v", err)
	}
}

func TestResolveKind(t *testing.T) {
	if ResolveKind("rf") != KindRF || ResolveKind("rf-golearn") != KindRFGolearn || ResolveKind("xgb") != KindXGB {
		t.Error("ResolveKind")
	}
}
