package features

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSchemaMismatch: a model was trained on another feature schema than the caller computes.
var ErrSchemaMismatch = errors.New("feature schema mismatch")

// SchemaMismatchError names both schemas; errors.Is(err, ErrSchemaMismatch) holds.
type SchemaMismatchError struct {
	Model SchemaID // schema in the model's meta.json
	Want  SchemaID // schema the caller computes features with
}

// Error implements error.
func (e *SchemaMismatchError) Error() string {
	return fmt.Sprintf("feature schema mismatch: model was trained on %s v%d, features are %s v%d; retrain the model or use a matching mirage version",
		e.Model.Name, e.Model.Version, e.Want.Name, e.Want.Version)
}

// Is makes errors.Is(err, ErrSchemaMismatch) true.
func (e *SchemaMismatchError) Is(target error) bool { return target == ErrSchemaMismatch }

// CheckSchema returns a *SchemaMismatchError unless got and want have the
// same name, version and fields.
func CheckSchema(got, want SchemaID) error {
	if got.Name != want.Name || got.Version != want.Version {
		return &SchemaMismatchError{Model: got, Want: want}
	}
	if len(got.Fields) != 0 && len(want.Fields) != 0 && strings.Join(got.Fields, ",") != strings.Join(want.Fields, ",") {
		// Same version with different fields is a programming error in a schema bump; report it as a mismatch.
		return &SchemaMismatchError{Model: got, Want: want}
	}
	return nil
}
