//go:build !linux

package slurm

import "os/exec"

// dieWithParent is a no-op where the kernel has no parent-death signal.
func dieWithParent(*exec.Cmd) (done func()) { return func() {} }
