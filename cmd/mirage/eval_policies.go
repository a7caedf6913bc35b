package main

import (
	"github.com/mirage-gpu/mirage/provisioner"
)

// evalPolicyFactory is the policy registry mirage eval uses: the
// provisioner's baselines. (modelsDir is recorded in the report; learned
// policies join the registry with the models package.)
func evalPolicyFactory(modelsDir string) (provisioner.PolicyFactory, error) {
	_ = modelsDir
	return func(name string) (provisioner.Policy, error) { return provisioner.BaselinePolicy(name) }, nil
}
