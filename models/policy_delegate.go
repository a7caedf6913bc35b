package models

import "github.com/mirage-gpu/mirage/provisioner"

// defaultBaseline builds the provisioner's own baselines. It is nil until
// provisioner.BaselinePolicy exists in this build (the chains work adds it);
// the registry then refuses those names with a clear error.
var defaultBaseline func(name string) (provisioner.Policy, error)
