// Package forest is the golearn random-forest learner (kind rf-golearn, the
// model behind the plain name rf): TrainRFGolearn fits golearn's ID3 forest
// (cgo: golearn links liblinear) and flattens its trees into
// RFGolearnModel, which serves P(safe) as the share of trees voting for it.
//
// Contract: the package registers KindRFGolearn with models.RegisterLoader
// in init; forest.gob holds the flattened trees. Fits are not reproducible
// (golearn draws from Go's global random source); rf-xgb (models/xgb) is
// the forest to use when a seed must reproduce the model.
package forest
