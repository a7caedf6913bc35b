package realslurm

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/sim"
)

// SchedulingConf writes the scheduling lines of slurm.conf that give a
// real slurmctld the priority and backfill settings of cfg: what
// scripts/slurm-up.sh puts in place of its default block when
// MIRAGE_SLURM_SCHED_CONF names a file holding them. sim.ParseSlurmConf
// reads them back into the same settings (TestSchedulingConfRoundTrip).
//
// Site settings slurm.conf does not hold are errors (MaxJobsAccrue:
// sacctmgr sets it). slurm.conf holds PriorityMaxAge, PriorityDecayHalfLife and
// PriorityCalcPeriod in whole minutes and bf_window in minutes: a setting
// that is not a whole number of minutes is an error, as is an interval
// that is not whole seconds. sched_min_interval=0 lets slurmctld run its
// main pass on every event, as the simulator does.
func SchedulingConf(cfg sim.Config) (string, error) {
	var b strings.Builder
	mins := func(name string, d time.Duration) (string, error) {
		if d <= 0 || d%time.Minute != 0 {
			return "", fmt.Errorf("%w: %s %s: slurm.conf holds it in whole minutes (at least one)", ErrPlan, name, d)
		}
		return strconv.FormatInt(int64(d/time.Minute), 10), nil
	}
	secs := func(name string, d time.Duration) (string, error) {
		if d <= 0 || d%time.Second != 0 {
			return "", fmt.Errorf("%w: %s %s: slurm.conf holds it in whole seconds (at least one)", ErrPlan, name, d)
		}
		return strconv.FormatInt(int64(d/time.Second), 10), nil
	}
	sched := "sched/builtin"
	if cfg.Backfill {
		sched = "sched/backfill"
	}
	fmt.Fprintf(&b, "SchedulerType=%s\n", sched)
	var params []string
	for _, p := range []struct {
		key string
		d   time.Duration
		min bool
	}{
		{"bf_interval", cfg.BFInterval, false},
		{"bf_resolution", cfg.BFResolution, false},
		{"bf_window", cfg.BFWindow, true},
		{"sched_interval", cfg.SchedInterval, false},
	} {
		f := secs
		if p.min {
			f = mins
		}
		v, err := f(p.key, p.d)
		if err != nil {
			return "", err
		}
		params = append(params, p.key+"="+v)
	}
	if cfg.BFMaxJobTest > 0 {
		params = append(params, "bf_max_job_test="+strconv.Itoa(cfg.BFMaxJobTest))
	}
	if cfg.BFMaxJobUser > 0 {
		params = append(params, "bf_max_job_user="+strconv.Itoa(cfg.BFMaxJobUser))
	}
	if cfg.BFMinAgeReserve > 0 {
		v, err := secs("bf_min_age_reserve", cfg.BFMinAgeReserve)
		if err != nil {
			return "", err
		}
		params = append(params, "bf_min_age_reserve="+v)
	}
	params = append(params, "sched_min_interval=0")
	fmt.Fprintf(&b, "SchedulerParameters=%s\n", strings.Join(params, ","))
	if cfg.MaxJobsAccrue > 0 {
		return "", fmt.Errorf("%w: MaxJobsAccrue %d: sacctmgr sets it (an association or QOS limit), not slurm.conf", ErrPlan, cfg.MaxJobsAccrue)
	}
	switch cfg.PriorityType {
	case sim.PriorityBasic, sim.PriorityMultifactor:
		fmt.Fprintf(&b, "PriorityType=%s\n", cfg.PriorityType)
	default:
		return "", fmt.Errorf("%w: PriorityType %q: want %s or %s", ErrPlan, cfg.PriorityType, sim.PriorityBasic, sim.PriorityMultifactor)
	}
	if cfg.PriorityAccrueAlways {
		b.WriteString("PriorityFlags=ACCRUE_ALWAYS\n")
	}
	for _, w := range []struct {
		key string
		v   float64
	}{
		{"PriorityWeightAge", cfg.PriorityWeightAge},
		{"PriorityWeightFairshare", cfg.PriorityWeightFairshare},
		{"PriorityWeightJobSize", cfg.PriorityWeightJobSize},
		{"PriorityWeightPartition", cfg.PriorityWeightPartition},
		{"PriorityWeightQOS", cfg.PriorityWeightQOS},
	} {
		if w.v < 0 || w.v != float64(int64(w.v)) {
			return "", fmt.Errorf("%w: %s %g: slurm.conf takes a whole number ≥ 0", ErrPlan, w.key, w.v)
		}
		fmt.Fprintf(&b, "%s=%d\n", w.key, int64(w.v))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"PriorityMaxAge", cfg.PriorityMaxAge},
		{"PriorityDecayHalfLife", cfg.PriorityDecayHalfLife},
		{"PriorityCalcPeriod", cfg.PriorityCalcPeriod},
	} {
		v, err := mins(d.key, d.v)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s=%s\n", d.key, v)
	}
	favor := "NO"
	if cfg.PriorityFavorSmall {
		favor = "YES"
	}
	fmt.Fprintf(&b, "PriorityFavorSmall=%s\n", favor)
	return b.String(), nil
}

// Setting is one site setting of the experiment: the age weight of the
// scheduler's priority (issue 46 asks for 1000 and 0).
type Setting struct {
	AgeWeight float64
}

// Name is the setting as the page and file names write it ("age1000").
func (s Setting) Name() string { return "age" + strconv.FormatFloat(s.AgeWeight, 'g', -1, 64) }

// Config is the simulator preset of the experiment's cluster under the
// setting, before its nodes (the cluster's slurm.conf adds them):
//
//   - priority/multifactor with only the age factor weighted (AgeWeight):
//     job size, fair-share, partition and QOS weigh 0, so that every other
//     job carries the same priority (the simulator's fair-share is the
//     classic formula where slurmctld's default is the fair tree, and its
//     job size factor counts nodes only: neither is what this experiment
//     checks); PriorityMaxAge is the ls6 preset's 7 days in trace time,
//     whole minutes (7 d / S); priorities are recomputed every minute
//     (PriorityCalcPeriod's least), the decay half-life is the same as the
//     max age (it weighs nothing here);
//   - backfill every 2 s, a 5 s resolution, a window covering the longest
//     limit (15 min), a periodic main pass every 10 s and
//     sched_min_interval=0 (a main pass on every event, as the simulator
//     runs one).
func (s Setting) Config(sc Scale) sim.Config {
	c := sim.Defaults()
	c.PriorityType = sim.PriorityMultifactor
	c.PriorityWeightAge = s.AgeWeight
	c.PriorityWeightJobSize, c.PriorityWeightFairshare, c.PriorityWeightPartition, c.PriorityWeightQOS = 0, 0, 0, 0
	maxAge := time.Duration(float64(sim.LS6().PriorityMaxAge)/sc.Factor/float64(time.Minute)+0.5) * time.Minute
	c.PriorityMaxAge = max(maxAge, time.Minute)
	c.PriorityDecayHalfLife = c.PriorityMaxAge
	c.PriorityCalcPeriod = time.Minute
	c.Backfill = true
	c.BFInterval = 2 * time.Second
	c.BFResolution = 5 * time.Second
	c.BFWindow = 15 * time.Minute
	c.SchedInterval = 10 * time.Second
	return c
}
