package slurm

import (
	"testing"

	"github.com/mirage-gpu/mirage/provisioner"
)

// TestReasonOf: squeue prints "None" both for a running job and for a
// pending one slurmctld has not looked at yet; only the pending one keeps
// it (pin counts it as waiting for nodes), every other empty form is "".
func TestReasonOf(t *testing.T) {
	for _, c := range []struct {
		state     provisioner.JobState
		raw, want string
	}{
		{provisioner.StatePending, "None", provisioner.PendingNone},
		{provisioner.StatePending, " None ", provisioner.PendingNone},
		{provisioner.StateRunning, "None", ""},
		{provisioner.StatePending, "Priority", provisioner.PendingPriority},
		{provisioner.StatePending, "(null)", ""},
		{provisioner.StatePending, "", ""},
	} {
		if got := reasonOf(c.state, c.raw); got != c.want {
			t.Errorf("reasonOf(%s, %q) = %q, want %q", c.state, c.raw, got, c.want)
		}
	}
}
