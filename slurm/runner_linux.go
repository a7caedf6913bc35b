package slurm

import (
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithParent makes the kernel send SIGKILL to cmd's process when the
// thread that started it dies (the parent-death signal). It returns the
// function to call once the command has been waited for: the starting
// goroutine is locked to its thread until then, because the signal follows
// the thread, not the process.
func dieWithParent(cmd *exec.Cmd) (done func()) {
	runtime.LockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return runtime.UnlockOSThread
}
