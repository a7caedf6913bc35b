package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("sim: bad configuration")

// NodeConfig is one compute node.
type NodeConfig struct {
	Name    string // node name
	CPUs    int    // CPUs
	GPUs    int    // GPUs (GRES gpu count)
	GPUType string // GPU type ("a100"), optional
}

// PartitionConfig is one partition.
type PartitionConfig struct {
	Name              string        // partition name
	Nodes             []string      // node names; empty means all nodes
	MaxTime           time.Duration // longest allowed limit (0 = unlimited)
	DefaultTime       time.Duration // limit of jobs that ask for none (0 = MaxTime)
	Exclusive         bool          // whole-node allocation (OverSubscribe=EXCLUSIVE or select/linear)
	PriorityJobFactor int           // partition priority factor (normalised by the largest)
	Default           bool          // the default partition
}

// QOSConfig is one quality of service.
type QOSConfig struct {
	Name        string // QOS name
	Priority    int    // QOS priority (normalised by the largest)
	Preemptible bool   // running jobs of this QOS may be preempted by jobs of non-preemptible QOS
	PreemptMode string // "requeue" or "cancel" (default cancel)
}

// Config is the simulated cluster and its scheduler parameters.
type Config struct {
	Nodes      []NodeConfig      // all nodes
	Partitions []PartitionConfig // partitions; empty means one exclusive partition "batch" of all nodes
	QOS        []QOSConfig       // QOS; "normal" is implied

	Backfill      bool          // run the backfill scheduler (SchedulerType=sched/backfill)
	SchedInterval time.Duration // sched_interval: periodic main pass
	BFInterval    time.Duration // bf_interval
	BFResolution  time.Duration // bf_resolution
	BFWindow      time.Duration // bf_window
	BFMaxJobTest  int           // bf_max_job_test

	PriorityWeightAge       float64       // PriorityWeightAge
	PriorityWeightFairshare float64       // PriorityWeightFairshare
	PriorityWeightJobSize   float64       // PriorityWeightJobSize
	PriorityWeightPartition float64       // PriorityWeightPartition
	PriorityWeightQOS       float64       // PriorityWeightQOS
	PriorityMaxAge          time.Duration // PriorityMaxAge
	PriorityDecayHalfLife   time.Duration // PriorityDecayHalfLife (0 = no decay)
	PriorityCalcPeriod      time.Duration // PriorityCalcPeriod
	PriorityFavorSmall      bool          // PriorityFavorSmall

	TickInterval time.Duration // decision-callback interval (default 10 min)
	SchedLatency time.Duration // event-triggered main passes run after a latency uniform in [0, SchedLatency] whole seconds (0: at once)
	Seed         uint64        // seed of the latency draws (the only randomness)
}

// Defaults returns Slurm 22.05's defaults (slurm.conf(5)) with no nodes.
func Defaults() Config {
	return Config{
		Backfill:              true,
		SchedInterval:         60 * time.Second,   // sched_interval default 60 s
		BFInterval:            30 * time.Second,   // bf_interval default 30 s
		BFResolution:          60 * time.Second,   // bf_resolution default 60 s
		BFWindow:              1440 * time.Minute, // bf_window default 1440 min
		BFMaxJobTest:          500,                // bf_max_job_test default 500
		PriorityMaxAge:        7 * 24 * time.Hour, // PriorityMaxAge default 7-0
		PriorityDecayHalfLife: 7 * 24 * time.Hour, // PriorityDecayHalfLife default 7-0
		PriorityCalcPeriod:    5 * time.Minute,    // PriorityCalcPeriod default 5 min
		TickInterval:          10 * time.Minute,   // mirage's decision cadence (issue 3)
	}
}

// LS6 returns the preset for TACC Lonestar6's gpu-a100 queue.
func LS6() Config {
	c := Defaults()
	// TACC documents 84 nodes × 3 A100-40GB, 128 cores each (LS6 user
	// guide, quoted in the trace README). The gpu-a100 queue never had all
	// of them: the trace shows at most 80 busy at once (p90 75), the rest
	// serving gpu-a100-dev, reservations or down. The usable count is
	// calibrated on the shared LS6 cut: 72 minimises the KS distance of
	// simulated and recorded waits (sweep 64–80 in docs/results/fidelity.md).
	for i := 1; i <= 72; i++ {
		c.Nodes = append(c.Nodes, NodeConfig{Name: fmt.Sprintf("c%03d", i), CPUs: 128, GPUs: 3, GPUType: "a100"})
	}
	c.Partitions = []PartitionConfig{{
		Name:        "gpu-a100",
		MaxTime:     48 * time.Hour, // TACC LS6 queue table: gpu-a100 max 48 h (trace README: p99 limit 2,880 min)
		DefaultTime: 48 * time.Hour, // no default documented; the max is assumed
		Exclusive:   true,           // gpu-a100 allocated whole nodes (trace README)
		Default:     true,
	}}
	// TACC publishes no PriorityWeight* values. Calibrated on the shared LS6
	// cut (docs/results/fidelity.md): age 1000, size 100, fair-share 500 over
	// Slurm's default 7-day half-life gave KS 0.087; heavier fair-share
	// (2000, 5000) lowers the p90 error but raises KS to 0.12–0.13.
	c.PriorityWeightAge = 1000
	c.PriorityWeightJobSize = 100
	c.PriorityWeightFairshare = 500
	// sacct rounds to whole seconds; 26% of recorded idle-cluster starts
	// show 1 s, 29% 0 s: a 0–1 s latency reproduces that.
	c.SchedLatency = time.Second
	c.Seed = 1
	c.BFWindow = 2880 * time.Minute // must cover the 48 h MaxTime for big jobs to get reservations (TACC sets bf_window ≥ MaxTime; assumed)
	return c
}

// Preset returns a named preset ("ls6", "default").
func Preset(name string) (Config, error) {
	switch name {
	case "ls6":
		return LS6(), nil
	case "default", "":
		return Defaults(), nil
	}
	return Config{}, fmt.Errorf("%w: unknown preset %q (want ls6 or default)", ErrConfig, name)
}

// ParseDuration parses a Slurm time string: "minutes", "minutes:seconds",
// "hours:minutes:seconds", "days-hours", "days-hours:minutes",
// "days-hours:minutes:seconds", or UNLIMITED/INFINITE (returned as 0).
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE", "":
		return 0, nil
	}
	days := 0
	rest := s
	hasDays := false
	if i := strings.IndexByte(s, '-'); i >= 0 {
		d, err := strconv.Atoi(s[:i])
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%w: time %q", ErrConfig, s)
		}
		days, rest, hasDays = d, s[i+1:], true
	}
	parts := strings.Split(rest, ":")
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: time %q", ErrConfig, s)
		}
		nums[i] = n
	}
	var h, m, sec int
	switch {
	case hasDays && len(nums) == 1:
		h = nums[0]
	case hasDays && len(nums) == 2:
		h, m = nums[0], nums[1]
	case len(nums) == 3:
		h, m, sec = nums[0], nums[1], nums[2]
	case !hasDays && len(nums) == 1:
		m = nums[0]
	case !hasDays && len(nums) == 2:
		m, sec = nums[0], nums[1]
	default:
		return 0, fmt.Errorf("%w: time %q", ErrConfig, s)
	}
	return time.Duration(((days*24+h)*60+m)*60+sec) * time.Second, nil
}

// ExpandHostlist expands a Slurm hostlist such as "node[001-003,007],gpu1".
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	for len(s) > 0 {
		// take one item up to a comma outside brackets
		depth, end := 0, len(s)
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '[':
				depth++
			case ']':
				depth--
			case ',':
				if depth == 0 {
					end = i
					i = len(s)
				}
			}
		}
		item := s[:end]
		if end < len(s) {
			s = s[end+1:]
		} else {
			s = ""
		}
		if item == "" {
			continue
		}
		lb := strings.IndexByte(item, '[')
		if lb < 0 {
			out = append(out, item)
			continue
		}
		rb := strings.IndexByte(item, ']')
		if rb < lb {
			return nil, fmt.Errorf("%w: hostlist %q", ErrConfig, item)
		}
		prefix, suffix := item[:lb], item[rb+1:]
		for _, r := range strings.Split(item[lb+1:rb], ",") {
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || b < a || b-a+len(out) > 1<<20 {
				return nil, fmt.Errorf("%w: hostlist range %q", ErrConfig, r)
			}
			for n := a; n <= b; n++ {
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, len(lo), n, suffix))
			}
		}
	}
	return out, nil
}

// ParseSlurmConf reads NodeName, PartitionName, Priority*, SelectType and
// SchedulerParameters lines of a slurm.conf onto base (usually Defaults()).
// Other lines are ignored. Keys are case-insensitive as in Slurm.
func ParseSlurmConf(r io.Reader, base Config) (Config, error) {
	c := base
	c.Nodes, c.Partitions = nil, nil
	linear := false
	sc := bufio.NewScanner(r)
	line := 0
	type partRaw struct {
		p     PartitionConfig
		exSet bool
	}
	var parts []partRaw
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		kv := func(f string) (string, string) {
			k, v, _ := strings.Cut(f, "=")
			return strings.ToLower(k), v
		}
		errf := func(err error) error { return fmt.Errorf("slurm.conf: line %d: %w", line, err) }
		k0, v0 := kv(fields[0])
		switch k0 {
		case "nodename":
			if strings.EqualFold(v0, "DEFAULT") {
				continue
			}
			names, err := ExpandHostlist(v0)
			if err != nil {
				return c, errf(err)
			}
			var n NodeConfig
			n.CPUs = 1
			for _, f := range fields[1:] {
				k, v := kv(f)
				switch k {
				case "cpus", "procs":
					x, err := strconv.Atoi(v)
					if err != nil {
						return c, errf(fmt.Errorf("%w: CPUs=%q", ErrConfig, v))
					}
					n.CPUs = x
				case "gres":
					for _, g := range strings.Split(v, ",") {
						ps := strings.Split(g, ":")
						if ps[0] != "gpu" || len(ps) < 2 {
							continue
						}
						cnt := ps[len(ps)-1]
						if i := strings.IndexByte(cnt, '('); i >= 0 {
							cnt = cnt[:i]
						}
						x, err := strconv.Atoi(cnt)
						if err != nil {
							return c, errf(fmt.Errorf("%w: Gres=%q", ErrConfig, v))
						}
						n.GPUs += x
						if len(ps) >= 3 {
							n.GPUType = ps[1]
						}
					}
				}
			}
			for _, name := range names {
				nn := n
				nn.Name = name
				c.Nodes = append(c.Nodes, nn)
			}
		case "partitionname":
			if strings.EqualFold(v0, "DEFAULT") {
				continue
			}
			pr := partRaw{p: PartitionConfig{Name: v0}}
			for _, f := range fields[1:] {
				k, v := kv(f)
				var err error
				switch k {
				case "nodes":
					if !strings.EqualFold(v, "ALL") {
						pr.p.Nodes, err = ExpandHostlist(v)
					}
				case "maxtime":
					pr.p.MaxTime, err = ParseDuration(v)
				case "defaulttime":
					pr.p.DefaultTime, err = ParseDuration(v)
				case "default":
					pr.p.Default = strings.EqualFold(v, "YES")
				case "oversubscribe", "shared":
					pr.exSet = true
					pr.p.Exclusive = strings.EqualFold(v, "EXCLUSIVE")
				case "priorityjobfactor", "priority":
					pr.p.PriorityJobFactor, err = strconv.Atoi(v)
				}
				if err != nil {
					return c, errf(fmt.Errorf("%w: %s=%q", ErrConfig, k, v))
				}
			}
			parts = append(parts, pr)
		case "selecttype":
			linear = strings.EqualFold(v0, "select/linear")
		case "schedulertype":
			c.Backfill = strings.EqualFold(v0, "sched/backfill")
		case "schedulerparameters":
			for _, p := range strings.Split(v0, ",") {
				k, v, _ := strings.Cut(p, "=")
				n, err := strconv.Atoi(v)
				if err != nil {
					continue // flags such as bf_continue carry no value
				}
				switch strings.ToLower(k) {
				case "bf_window":
					c.BFWindow = time.Duration(n) * time.Minute
				case "bf_resolution":
					c.BFResolution = time.Duration(n) * time.Second
				case "bf_interval":
					c.BFInterval = time.Duration(n) * time.Second
				case "bf_max_job_test":
					c.BFMaxJobTest = n
				case "sched_interval":
					c.SchedInterval = time.Duration(n) * time.Second
				}
			}
		case "priorityweightage", "priorityweightfairshare", "priorityweightjobsize", "priorityweightpartition", "priorityweightqos":
			x, err := strconv.ParseFloat(v0, 64)
			if err != nil {
				return c, errf(fmt.Errorf("%w: %s=%q", ErrConfig, k0, v0))
			}
			switch k0 {
			case "priorityweightage":
				c.PriorityWeightAge = x
			case "priorityweightfairshare":
				c.PriorityWeightFairshare = x
			case "priorityweightjobsize":
				c.PriorityWeightJobSize = x
			case "priorityweightpartition":
				c.PriorityWeightPartition = x
			case "priorityweightqos":
				c.PriorityWeightQOS = x
			}
		case "prioritymaxage", "prioritydecayhalflife", "prioritycalcperiod":
			d, err := ParseDuration(v0)
			if err != nil {
				return c, errf(err)
			}
			switch k0 {
			case "prioritymaxage":
				c.PriorityMaxAge = d
			case "prioritydecayhalflife":
				c.PriorityDecayHalfLife = d
			case "prioritycalcperiod":
				c.PriorityCalcPeriod = d
			}
		case "priorityfavorsmall":
			c.PriorityFavorSmall = strings.EqualFold(v0, "YES")
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("slurm.conf: %w", err)
	}
	for _, pr := range parts {
		if !pr.exSet {
			pr.p.Exclusive = linear
		}
		c.Partitions = append(c.Partitions, pr.p)
	}
	return c, nil
}
