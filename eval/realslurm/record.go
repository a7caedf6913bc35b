package realslurm

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
)

// Record is what one real run left behind: its cluster's configuration,
// the jobs sacct recorded, the chains as `mirage status --json` and
// `mirage log --json` report them, and the daemon's cycles. Simulate
// replays it; it is written as JSON beside the page's figures (never into
// the repository: it holds the trace's jobs, scaled).
type Record struct {
	Release   string        `json:"release"`    // Slurm release, MAJOR.MINOR
	Setting   Setting       `json:"setting"`    // the site setting the cluster ran
	Policy    string        `json:"policy"`     // the chains' policy
	Scale     Scale         `json:"scale"`      // the time scale and size mapping
	Cycle     time.Duration `json:"cycle"`      // the daemon's cycle (real time)
	Lead      time.Duration `json:"lead"`       // the daemon's --lead (its cycle); 0: provisioner.DefaultLead
	SlurmConf string        `json:"slurm_conf"` // the cluster's slurm.conf as it ran
	Start     time.Time     `json:"start"`      // the run's origin: plan offsets count from here
	End       time.Time     `json:"end"`        // when the run stopped (the last chain ended, or the deadline)
	// Plan is the background jobs the run submitted, as planned (a job
	// the run's end cancelled recorded no run time of its own; the
	// recorded waits of the trace, scaled, are kept beside the real ones).
	Plan []BackgroundJob `json:"plan"`
	// Background is the second user's jobs, as sacct recorded them.
	Background []provisioner.Job         `json:"background"`
	Chains     []ChainRun                `json:"chains"`
	Cycles     []CycleRun                `json:"cycles"`
	SchedLog   map[string]SchedulerStart `json:"sched_log,omitempty"` // which pass started each job, from slurmctld's log, by job id
	// Probe is what the idle cluster took, before the run's load, to start
	// each of ProbeJobs single-GPU jobs it had room for (start − submit, in
	// sacct's whole seconds): the simulator's per-job scheduling latency
	// (sim.Config.LatencyTable). Measured on jobs that are not scored.
	Probe []time.Duration `json:"probe,omitempty"`
	// Commit is the mirage commit the run's binary was built from
	// ("-dirty": with uncommitted changes; empty in records before it was
	// kept).
	Commit string `json:"commit,omitempty"`
}

// ChainRun is one chain of a run.
type ChainRun struct {
	Status     chainops.ChainJSON      `json:"status"`     // mirage status CHAIN --json at the end
	Decisions  []chainops.DecisionJSON `json:"decisions"`  // mirage log CHAIN --json
	Registered time.Time               `json:"registered"` // when mirage submit ran
	Work       time.Duration           `json:"work"`       // each segment's sleep
	Jobs       []provisioner.Job       `json:"jobs"`       // its segments' jobs as sacct recorded them
}

// CycleRun is one `mirage daemon --once` of the cron-like loop.
type CycleRun struct {
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	Exit     int           `json:"exit"`
}

// SchedulerStart is how slurmctld's log says it started a job: by the
// main scheduling pass ("sched: Allocate") or by backfill ("backfill:
// Started").
type SchedulerStart string

// The passes that start jobs.
const (
	StartedByMain     SchedulerStart = "main"
	StartedByBackfill SchedulerStart = "backfill"
)

// Key names a run: release, setting and policy.
func (r *Record) Key() string { return r.Release + "/" + r.Setting.Name() + "/" + r.Policy }

// WriteFile writes the record as JSON (0600: it holds a trace's jobs).
func (r *Record) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("record %s: %w", r.Key(), err)
	}
	return os.WriteFile(path, b, 0o600)
}

// ReadRecord reads a record WriteFile wrote.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("record %s: %w", path, err)
	}
	return &r, nil
}

// planned is the plan's jobs by name.
func (r *Record) planned() map[string]*BackgroundJob {
	m := make(map[string]*BackgroundJob, len(r.Plan))
	for i := range r.Plan {
		m[r.Plan[i].Name] = &r.Plan[i]
	}
	return m
}

// Policies is the registry the run's daemon decided with: the learned
// policies of modelsDir, and the lead and pin baselines with the run's
// lead (mirage daemon --lead).
func (r *Record) Policies(modelsDir string) provisioner.PolicyFactory {
	opts := models.PolicyOptions{}
	if r.Lead > 0 {
		opts.Baseline = func(name string) (provisioner.Policy, error) {
			return provisioner.BaselinePolicy(name, provisioner.WithLead(r.Lead))
		}
	}
	return models.PolicyFactory(modelsDir, opts)
}

// segmentJobs returns, per segment index, the job of the segment's last
// attempt that the chain's status lists, as sacct recorded it (absent:
// never submitted, or sacct lacks it).
func (c *ChainRun) segmentJobs() map[int]provisioner.Job {
	byID := map[string]provisioner.Job{}
	for _, j := range c.Jobs {
		byID[j.ID] = j
	}
	out := map[int]provisioner.Job{}
	last := map[int]int{}
	for _, s := range c.Status.SegmentList {
		j, ok := byID[s.JobID]
		if !ok {
			continue
		}
		if a, seen := last[s.Index]; seen && a > s.Attempt {
			continue
		}
		last[s.Index] = s.Attempt
		out[s.Index] = j
	}
	return out
}

// HandOffGaps are a chain's hand-offs: for each successor k ≥ 1 whose
// predecessor ended, start(k) − end(k−1), or censored (ok false) when the
// successor never started.
func handOffGaps(starts, ends map[int]time.Time, segments int) []Gap {
	var out []Gap
	for k := 1; k < segments; k++ {
		end, ok := ends[k-1]
		if !ok || end.IsZero() {
			continue
		}
		st := starts[k]
		out = append(out, Gap{Segment: k, Gap: st.Sub(end), OK: !st.IsZero()})
	}
	return out
}

// Gap is one hand-off: the successor's start − its predecessor's end.
type Gap struct {
	Segment int           // the successor
	Gap     time.Duration // start − predecessor end (ok), else unknown
	OK      bool          // the successor started
	Pinned  bool          // it was submitted pinned to its predecessor's nodes and the pin was never lifted
}

// RealGaps are the chain's hand-offs on the real cluster (sacct's times).
func (c *ChainRun) RealGaps() []Gap {
	jobs := c.segmentJobs()
	starts, ends := map[int]time.Time{}, map[int]time.Time{}
	for k, j := range jobs {
		starts[k], ends[k] = j.Start, j.End
	}
	acts := make([]provisioner.Action, len(c.Decisions))
	segs := make([]int, len(c.Decisions))
	for i, d := range c.Decisions {
		acts[i], segs[i] = provisioner.Action(d.Action), d.Segment
	}
	return markPinned(handOffGaps(starts, ends, c.Status.Segments), acts, segs)
}

// markPinned marks the hand-offs whose successor a decision submitted
// pinned and no later decision unpinned (decisions in order: their
// actions and the segments they were about).
func markPinned(gaps []Gap, acts []provisioner.Action, segs []int) []Gap {
	pinned := map[int]bool{}
	for i, a := range acts {
		switch a {
		case provisioner.SubmitPinned:
			pinned[segs[i]] = true
		case provisioner.ActUnpin:
			pinned[segs[i]] = false
		}
	}
	for i := range gaps {
		gaps[i].Pinned = pinned[gaps[i].Segment]
	}
	return gaps
}

// segmentRuntime is the median run time sacct recorded for the run's
// chain segments that ran and ended (the simulator's segment run time:
// the script's sleep plus what starting it took).
func (r *Record) segmentRuntime() time.Duration {
	var rs []time.Duration
	for i := range r.Chains {
		for _, j := range r.Chains[i].Jobs {
			if !j.Start.IsZero() && !j.End.IsZero() && j.State == provisioner.StateCompleted {
				rs = append(rs, j.End.Sub(j.Start))
			}
		}
	}
	if len(rs) == 0 {
		if len(r.Chains) > 0 {
			return r.Chains[0].Work
		}
		return 0
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}
