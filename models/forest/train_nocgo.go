//go:build !cgo

package forest

import (
	"errors"

	"github.com/mirage-gpu/mirage/models"
)

// TrainRFGolearn needs cgo (golearn's ensemble package links liblinear); this build returns an error.
func TrainRFGolearn(ds *models.Dataset, p GolearnRFParams, meta models.Meta) (*RFGolearnModel, error) {
	return nil, errors.New("training rf-golearn needs a cgo build (golearn links liblinear)")
}
