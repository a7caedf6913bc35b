package models

import "github.com/mirage-gpu/mirage/provisioner"

// defaultBaseline builds the provisioner's own baselines (reactive,
// dependency, lead, start-estimate) with their default options.
var defaultBaseline = func(name string) (provisioner.Policy, error) { return provisioner.BaselinePolicy(name) }
