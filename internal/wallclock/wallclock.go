// Package wallclock is the real clock behind provisioner.Timer: the one
// place outside cmd where the adapters (slurm, k8s) read the wall time and
// wait on it; their tests inject their own Timer instead.
package wallclock

import "time"

// Clock is the wall clock.
type Clock struct{}

// Now returns the current wall-clock time.
func (Clock) Now() time.Time { return time.Now() }

// After waits on the wall clock.
func (Clock) After(d time.Duration) <-chan time.Time { return time.After(d) }
