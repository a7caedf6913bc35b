//go:build !cgo

package models

import "errors"

// TrainRFGolearn needs cgo (golearn's ensemble package links liblinear); this build returns an error.
func TrainRFGolearn(ds *Dataset, p GolearnRFParams, meta Meta) (*RFGolearnModel, error) {
	return nil, errors.New("training rf-golearn needs a cgo build (golearn links liblinear)")
}
