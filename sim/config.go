package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
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

	Backfill      bool          // run the backfill scheduler (SchedulerType=sched/backfill; default yes)
	SchedInterval time.Duration // sched_interval: periodic main pass (default 60 s)
	BFInterval    time.Duration // bf_interval (default 30 s)
	BFResolution  time.Duration // bf_resolution (default 60 s)
	// BFWindow is bf_window (default 1440 min): a pending job whose
	// planned start lies beyond now + BFWindow gets no reservation
	// (backfill.c: "StartTime set to time after current backfill window.
	// No reservation created"), so lower-priority jobs may take its place.
	BFWindow     time.Duration
	BFMaxJobTest int // bf_max_job_test (default 500): jobs a backfill pass plans at most
	// BFMaxJobUser is bf_max_job_user (default 0: no limit): a backfill
	// pass tests at most this many jobs of one user (all partitions); the
	// user's further jobs are neither started nor reserved for by that pass
	// (backfill.c _job_exceeds_max_bf_param).
	BFMaxJobUser int
	// BFMinAgeReserve is bf_min_age_reserve (default 0): a job eligible for
	// less than this gets no backfill reservation (backfill may still start
	// it at once), and in the main pass it does not stop lower-priority jobs
	// of its partition nor hold its required nodes (slurm.conf(5): "will not
	// prevent a newly submitted job from starting immediately").
	BFMinAgeReserve time.Duration

	// PriorityType is PriorityBasic (Slurm 22.05's default: FIFO, the
	// order of submission; every PriorityWeight* is ignored, as slurmctld
	// ignores them) or PriorityMultifactor (the weighted factors below).
	PriorityType string
	// PriorityWeightAge is PriorityWeightAge (default 0). The age factor is
	// (now − accrual start) / PriorityMaxAge, capped at 1
	// (priority_multifactor.c); age accrues from eligibility: not while a
	// dependency or a begin time holds the job (acct_policy.c), nor while
	// its user is at MaxJobsAccrue — unless PriorityAccrueAlways.
	PriorityWeightAge       float64
	PriorityWeightFairshare float64       // PriorityWeightFairshare (default 0)
	PriorityWeightJobSize   float64       // PriorityWeightJobSize (default 0): nodes / cluster nodes (1 − that with PriorityFavorSmall)
	PriorityWeightPartition float64       // PriorityWeightPartition (default 0): PriorityJobFactor / the largest
	PriorityWeightQOS       float64       // PriorityWeightQOS (default 0): QOS priority / the largest
	PriorityWeightRecorded  float64       // not Slurm's: weight of a replayed job's recorded priority (JobSpec.RecordedPriority; calibration)
	PriorityMaxAge          time.Duration // PriorityMaxAge (default 7-0): the age at which the age factor reaches 1
	PriorityDecayHalfLife   time.Duration // PriorityDecayHalfLife (default 7-0; 0 = no decay)
	PriorityCalcPeriod      time.Duration // PriorityCalcPeriod (default 5 min)
	PriorityFavorSmall      bool          // PriorityFavorSmall (default NO)
	// PriorityAccrueAlways is PriorityFlags=ACCRUE_ALWAYS (default off):
	// age accrues from submission, held or not, and MaxJobsAccrue is
	// ignored (slurm.conf(5)).
	PriorityAccrueAlways bool
	// MaxJobsAccrue is how many of a user's pending jobs accrue age at
	// once (0, Slurm's default: all): the association limit MaxJobsAccrue
	// or the QOS limit MaxJobsAccruePerUser, set with sacctmgr, not in
	// slurm.conf (NERSC: MaxJobsAccruePerUser=2). The user's oldest
	// eligible jobs accrue; a newer one starts accruing, from that moment,
	// when one of them leaves the queue ("new jobs will be queued but will
	// not accrue age priority", sacctmgr(1)).
	MaxJobsAccrue int

	// Checkpoint is how long a running job takes to checkpoint and exit
	// once signalled (Sim.Signal: what `mirage handoff` asks of a chain's
	// predecessor). 0: signals change nothing (the published protocol,
	// where every segment runs to its end).
	Checkpoint time.Duration

	TickInterval time.Duration // decision-callback interval (default 10 min)
	SchedLatency time.Duration // event-triggered main passes run after a latency uniform in [0, SchedLatency] whole seconds (0: at once)
	// LatencyTable, when set, replaces SchedLatency's per-pass draw by an
	// empirical per-job one: each job reaches the scheduler LatencyTable[k]
	// (whole seconds) after its submission, k uniform over the entries (the
	// quantiles a calibration measured: what the real scheduler took to
	// start a job it had room for). Its submission time stays as it was.
	LatencyTable []time.Duration
	// EndLatencyTable, when set, keeps an ended job's nodes held for a
	// latency drawn in the same way, EndLatencyTable[k] (whole seconds), as
	// slurmctld keeps them COMPLETING until the node's epilog-complete
	// message and schedules them at its next pass: the job is ended for
	// squeue and sacct at once, but no pass can start a job on its nodes
	// before the latency is over. On 22.05 a pinned successor started
	// 0–2 s after its predecessor's recorded end, like a job submitted to
	// an idle cluster (the real-scheduler benchmark's probe; eval/realslurm),
	// and a stream of 0 s two-node jobs ran one every 1–2 s. Without it the
	// nodes are free at the end.
	EndLatencyTable []time.Duration
	Seed            uint64 // seed of the latency draws (the only randomness)
}

// The values of Config.PriorityType (slurm.conf PriorityType).
const (
	PriorityBasic       = "priority/basic"
	PriorityMultifactor = "priority/multifactor"
)

// Defaults returns Slurm 22.05's defaults (slurm.conf(5)) with no nodes.
func Defaults() Config {
	return Config{
		PriorityType:          PriorityBasic, // PriorityType default priority/basic in 22.05 (newer releases default to multifactor)
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
	// TACC publishes neither its PriorityType nor PriorityWeight* values;
	// the preset weighs priorities, which takes priority/multifactor (the
	// weights below are ignored under 22.05's default priority/basic).
	// Calibrated on the shared LS6
	// cut (docs/results/fidelity.md): age 1000, size 100, fair-share 500 over
	// Slurm's default 7-day half-life gave KS 0.087; heavier fair-share
	// (2000, 5000) lowers the p90 error but raises KS to 0.12–0.13.
	c.PriorityType = PriorityMultifactor
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

// Preset returns a named preset ("ls6", "default") or, for a path (one
// with a slash or a .yaml/.yml name), the preset file there (LoadPresetFile).
func Preset(name string) (Config, error) {
	switch name {
	case "ls6":
		return LS6(), nil
	case "default", "":
		return Defaults(), nil
	}
	if isPresetPath(name) {
		return LoadPresetFile(name)
	}
	return Config{}, fmt.Errorf("%w: unknown preset %q (want ls6, default, or a preset file's path such as ./site.yaml from mirage sim calibrate)", ErrConfig, name)
}

// maxConfHosts caps the names one slurm.conf hostlist may expand to.
const maxConfHosts = 1 << 20

// expandHostlist expands a slurm.conf hostlist (NodeName=, Nodes=).
func expandHostlist(s string) ([]string, error) {
	names, err := slurmfmt.ExpandHostlist(s, maxConfHosts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return names, nil
}

// confDuration reads a slurm.conf time (MaxTime, DefaultTime,
// PriorityMaxAge, ...). UNLIMITED and INFINITE (slurm.conf(5)) are 0, which
// Config reads as "no limit"; an empty value is 0 as well. The words only
// Slurm's outputs print (N/A, Partition_Limit, ...) are not slurm.conf
// values and are errors.
func confDuration(s string) (time.Duration, error) {
	d, err := slurmfmt.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case d.Kind == slurmfmt.Set:
		return d.Value, nil
	case d.Kind == slurmfmt.Unlimited, strings.TrimSpace(s) == "":
		return 0, nil
	}
	return 0, fmt.Errorf("%w: time %q: want a duration, UNLIMITED or INFINITE", ErrConfig, s)
}

// ParseSlurmConf reads NodeName, PartitionName, PriorityType,
// PriorityFlags (ACCRUE_ALWAYS), PriorityWeight*, Priority{MaxAge,
// DecayHalfLife,CalcPeriod,FavorSmall}, SchedulerType, SelectType and
// SchedulerParameters (bf_window, bf_resolution, bf_interval,
// bf_max_job_test, bf_max_job_user, bf_min_age_reserve, sched_interval)
// lines of a slurm.conf onto base (usually Defaults()): a setting the file
// does not name keeps base's value. Other lines are ignored. Keys are
// case-insensitive as in Slurm. MaxJobsAccrue is no slurm.conf setting
// (sacctmgr sets it): a preset file carries it.
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
			names, err := expandHostlist(v0)
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
					gpus, typ, err := slurmfmt.GPUsFromGRES(v)
					if err != nil {
						return c, errf(fmt.Errorf("%w: Gres=%q: %w", ErrConfig, v, err))
					}
					n.GPUs += gpus
					if typ != "" {
						n.GPUType = typ
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
						pr.p.Nodes, err = expandHostlist(v)
					}
				case "maxtime":
					pr.p.MaxTime, err = confDuration(v)
				case "defaulttime":
					pr.p.DefaultTime, err = confDuration(v)
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
				case "bf_max_job_user":
					c.BFMaxJobUser = n
				case "bf_min_age_reserve":
					c.BFMinAgeReserve = time.Duration(n) * time.Second
				}
			}
		case "prioritytype":
			switch t := strings.ToLower(v0); t {
			case PriorityBasic, PriorityMultifactor:
				c.PriorityType = t
			default:
				return c, errf(fmt.Errorf("%w: PriorityType=%q: the simulator models %s and %s", ErrConfig, v0, PriorityBasic, PriorityMultifactor))
			}
		case "priorityflags":
			// Only ACCRUE_ALWAYS is modelled; the line sets the flags, so
			// its absence clears it.
			c.PriorityAccrueAlways = false
			for _, f := range strings.Split(v0, ",") {
				if strings.EqualFold(strings.TrimSpace(f), "ACCRUE_ALWAYS") {
					c.PriorityAccrueAlways = true
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
			d, err := confDuration(v0)
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
