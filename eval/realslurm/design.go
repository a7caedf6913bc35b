package realslurm

import (
	"fmt"
	"time"
)

// Design is the shape of one run: the daemon's cycle and the chains
// registered during it, in real time on the loopback cluster.
type Design struct {
	Cycle    time.Duration // the cron-like loop's period (S · Cycle of trace time)
	Warmup   time.Duration // background load alone before the first chain
	Chains   int           // chains registered
	Every    time.Duration // between two registrations
	Sizes    []int         // nodes per segment, taken in turn (whole nodes)
	Segments int           // segments per chain (K)
	Limit    time.Duration // each segment's limit (whole minutes)
	// Margin is how long before its limit a segment's sleep ends: it
	// works its limit less this, as a segment that uses its limit would,
	// without Slurm's late kill (see RunMargin).
	Margin time.Duration
	// Deadline bounds the run after the last registration: chains still
	// active then are left, their open hand-offs censored.
	Deadline time.Duration
}

// ChainPlan is one chain of a run.
type ChainPlan struct {
	At       time.Duration // when `mirage submit` registers it, after the run's start
	Nodes    int           // nodes per segment (GPUsPerNode GPUs each)
	Segments int           // segments
	Limit    time.Duration // each segment's limit
	Work     time.Duration // each segment's sleep
}

// Validate reports a design that cannot run.
func (d Design) Validate() error {
	switch {
	case d.Cycle < time.Second:
		return fmt.Errorf("%w: cycle %s: want at least 1s", ErrPlan, d.Cycle)
	case d.Chains < 1 || len(d.Sizes) == 0 || d.Segments < 2:
		return fmt.Errorf("%w: %d chains of %d segments in %d sizes: want at least one chain of two segments", ErrPlan, d.Chains, d.Segments, len(d.Sizes))
	case d.Limit < time.Minute || d.Limit%time.Minute != 0:
		return fmt.Errorf("%w: segment limit %s: want whole minutes", ErrPlan, d.Limit)
	case d.Margin <= 0 || d.Margin >= d.Limit:
		return fmt.Errorf("%w: margin %s: want between 0 and the limit %s", ErrPlan, d.Margin, d.Limit)
	}
	for _, n := range d.Sizes {
		if n < 1 {
			return fmt.Errorf("%w: chain size %d: want at least one node", ErrPlan, n)
		}
	}
	return nil
}

// ChainPlans lists the run's chains: registered every Every from Warmup,
// sizes in turn.
func (d Design) ChainPlans() []ChainPlan {
	out := make([]ChainPlan, d.Chains)
	for i := range out {
		out[i] = ChainPlan{At: d.Warmup + time.Duration(i)*d.Every, Nodes: d.Sizes[i%len(d.Sizes)], Segments: d.Segments, Limit: d.Limit, Work: d.Limit - d.Margin}
	}
	return out
}

// Length is how long a run lasts at most: the last registration plus the
// deadline.
func (d Design) Length() time.Duration {
	return d.Warmup + time.Duration(d.Chains-1)*d.Every + d.Deadline
}
