package realslurm

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/mirage-gpu/mirage/sim"
)

// SimRun is the simulator's replay of a Record: when each background job
// started and each chain's hand-offs, with the decisions the policies
// took.
type SimRun struct {
	Config    sim.Config           // the simulated cluster (the run's slurm.conf)
	Starts    map[string]time.Time // background job name → simulated start (absent: never started)
	Gaps      map[string][]Gap     // chain id → its hand-offs
	Pinned    map[string]int       // chain id → pinned submissions (submit-pinned decisions)
	Unpinned  map[string]int       // chain id → node lists lifted (unpin decisions)
	Unstarted int                  // background jobs the replay never started
}

// SimHorizon is how long after the real run stopped the replay goes on
// for chains still active; what has not happened by then is censored.
const SimHorizon = 30 * time.Minute

// Simulate replays rec in the simulator: the cluster of its slurm.conf
// (sim.ParseSlurmConf over sim.Defaults: what slurm.conf does not say is
// the simulator's default), its background jobs at their recorded
// submission (eligible) times with their recorded limits, sizes and run
// times, and its chains, each registered at the time `mirage submit` ran
// with the shape and policy it stored, driven by provisioner.Engine every
// rec.Cycle with one store for all of them (as the daemon keeps one),
// each segment running the run's median segment run time; every job
// reaches the scheduler after a latency drawn from the run's Probe (none
// without one), and an ended job's nodes stay held for a latency drawn
// from it (sim.Config.EndLatencyTable). policies builds
// the chains' policies (models.PolicyFactory of the run's models
// directory, for the learned ones).
func Simulate(ctx context.Context, rec *Record, policies provisioner.PolicyFactory) (*SimRun, error) {
	return SimulateSeed(ctx, rec, policies, sim.Defaults().Seed)
}

// SimulateSeed is Simulate with the seed of the latency draws (the
// simulator's only randomness) given: the replays of one record under
// several seeds show how far the simulator differs from itself.
func SimulateSeed(ctx context.Context, rec *Record, policies provisioner.PolicyFactory, seed uint64) (*SimRun, error) {
	cfg, err := sim.ParseSlurmConf(strings.NewReader(rec.SlurmConf), sim.Defaults())
	if err != nil {
		return nil, fmt.Errorf("simulate %s: %w", rec.Key(), err)
	}
	cfg.Seed = seed
	if len(rec.Probe) > 0 {
		// what the real slurmctld took to start a job it had room for
		// (sacct's whole seconds: a job started within the second of its
		// submission waited 0): each job's latency is drawn from the probe
		cfg.LatencyTable = slices.Clone(rec.Probe)
		// and an ended job's nodes are held as long (slurmctld's
		// COMPLETING: a pinned successor started 0–2 s after its
		// predecessor's recorded end on 22.05, a stream of 0 s jobs ran one
		// every 1–2 s)
		cfg.EndLatencyTable = slices.Clone(rec.Probe)
	}
	if rec.Cycle < time.Second {
		return nil, fmt.Errorf("%w: simulate %s: cycle %s: want at least 1s", ErrPlan, rec.Key(), rec.Cycle)
	}
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simulate %s: %w", rec.Key(), err)
	}
	specs := backgroundSpecs(rec)
	if err := s.Load(specs); err != nil {
		return nil, fmt.Errorf("simulate %s: %w", rec.Key(), err)
	}
	s.SetStart(rec.Start)
	segRun := rec.segmentRuntime()
	s.SetRuntimeFunc(func(provisioner.SubmitRequest) time.Duration { return segRun })

	st := provisioner.NewMemStore()
	cl := simCluster{s}
	eng := &provisioner.Engine{Cluster: cl, Store: st, Clock: simClock{s}, Policies: provisioner.ByName(policies), Log: slog.New(slog.DiscardHandler)}
	var cycleErr error
	s.OnTick(rec.Cycle, func(time.Time, provisioner.Cluster) {
		if cycleErr == nil {
			if _, err := eng.Cycle(ctx); err != nil {
				cycleErr = fmt.Errorf("cycle at %s: %w", s.Now().Format(time.RFC3339), err)
			}
		}
	})
	chains := slices.Clone(rec.Chains)
	slices.SortStableFunc(chains, func(a, b ChainRun) int { return a.Registered.Compare(b.Registered) })
	for i := range chains {
		c := &chains[i]
		s.Run(c.Registered)
		if cycleErr != nil {
			return nil, fmt.Errorf("simulate %s: %w", rec.Key(), cycleErr)
		}
		ch := simChain(&c.Status, c.Registered)
		if err := st.PutChain(ctx, &ch); err != nil {
			return nil, err
		}
		if _, err := eng.CycleChains(ctx, []string{ch.ID}); err != nil { // segment 0, as mirage submit submits it
			return nil, fmt.Errorf("simulate %s: chain %s: %w", rec.Key(), ch.ID, err)
		}
	}
	deadline := rec.End.Add(SimHorizon)
	for s.Now().Before(deadline) {
		s.Run(minTime(s.Now().Add(time.Minute), deadline))
		if cycleErr != nil {
			return nil, fmt.Errorf("simulate %s: %w", rec.Key(), cycleErr)
		}
		if ok, err := allEnded(ctx, st, chains); err != nil {
			return nil, err
		} else if ok {
			break
		}
	}
	out := &SimRun{Config: cfg, Starts: map[string]time.Time{}, Gaps: map[string][]Gap{}, Pinned: map[string]int{}, Unpinned: map[string]int{}}
	starts := map[string]map[int]time.Time{}
	ends := map[string]map[int]time.Time{}
	attempt := map[string]map[int]int{}
	for _, j := range s.History(rec.Start.Add(-time.Hour)) {
		if tag, ok := provisioner.ParseTag(j.Comment); ok {
			if starts[tag.Chain] == nil {
				starts[tag.Chain], ends[tag.Chain], attempt[tag.Chain] = map[int]time.Time{}, map[int]time.Time{}, map[int]int{}
			}
			if a, seen := attempt[tag.Chain][tag.Segment]; seen && a > tag.Attempt {
				continue
			}
			attempt[tag.Chain][tag.Segment] = tag.Attempt
			starts[tag.Chain][tag.Segment], ends[tag.Chain][tag.Segment] = j.Start, j.End
			continue
		}
		if !j.Start.IsZero() {
			out.Starts[j.ID] = j.Start
		}
	}
	for _, sp := range specs {
		if _, ok := out.Starts[sp.ID]; !ok {
			out.Unstarted++
		}
	}
	for i := range chains {
		id := chains[i].Status.ID
		ds, err := st.Decisions(ctx, id)
		if err != nil {
			return nil, err
		}
		acts, segs := make([]provisioner.Action, len(ds)), make([]int, len(ds))
		for k, d := range ds {
			acts[k], segs[k] = d.Action, d.Segment
		}
		out.Gaps[id] = markPinned(handOffGaps(starts[id], ends[id], chains[i].Status.Segments), acts, segs)
		for _, d := range ds {
			if d.Action == provisioner.ActError {
				// a replay whose policy could not decide compares nothing
				// (e.g. a model kind not registered: the program must
				// import models/learners)
				return nil, fmt.Errorf("simulate %s: chain %s, segment %d at %s: the replay could not decide: %s",
					rec.Key(), id, d.Segment, d.Time.Format(time.RFC3339), cmp.Or(d.Error, d.Reason))
			}
			switch d.Action {
			case provisioner.SubmitPinned:
				out.Pinned[id]++
			case provisioner.ActUnpin:
				out.Unpinned[id]++
			}
		}
	}
	return out, nil
}

// backgroundSpecs are the run's background jobs that sacct recorded as
// submitted, as the simulator takes them: submitted when they became
// eligible, with their limit, size and run time (the recorded one, or the
// planned one for a job the run's end cancelled before it could end).
func backgroundSpecs(rec *Record) []sim.JobSpec {
	var specs []sim.JobSpec
	planned := rec.planned()
	for _, j := range rec.Background {
		if j.Submit.IsZero() {
			continue
		}
		submit := j.Submit
		if j.Eligible.After(submit) {
			submit = j.Eligible
		}
		var run time.Duration
		if p := planned[j.Name]; p != nil {
			run = p.Run
		}
		if !j.Start.IsZero() && !j.End.IsZero() && j.State == provisioner.StateCompleted {
			run = j.End.Sub(j.Start)
		}
		specs = append(specs, sim.JobSpec{ID: j.Name, Name: j.Name, User: j.User, Account: j.Account, Partition: j.Partition,
			Submit: submit, TimeLimit: j.TimeLimit, Runtime: max(run.Round(time.Second), time.Second), Nodes: max(j.Nodes, 1), GPUs: j.GPUs})
	}
	slices.SortStableFunc(specs, func(a, b sim.JobSpec) int { return a.Submit.Compare(b.Submit) })
	return specs
}

// simChain is the chain a run stored, registered in the simulator at
// registered: its shape and policy, active, no segment yet.
func simChain(c *chainops.ChainJSON, registered time.Time) provisioner.Chain {
	return provisioner.Chain{
		ID: c.ID, Name: c.Name, Script: "/dev/null", Policy: c.Policy, Models: c.Models, Workload: c.Workload, Cost: c.Cost,
		Segments: c.Segments, MaxRetries: c.MaxRetries, Account: c.Account, Partition: c.Partition,
		TimeLimit: time.Duration(c.TimeLimitS) * time.Second, Nodes: c.Nodes, GPUs: c.GPUs,
		State: provisioner.ChainActive, Created: registered,
	}
}

func allEnded(ctx context.Context, st provisioner.Store, chains []ChainRun) (bool, error) {
	for i := range chains {
		c, err := st.Chain(ctx, chains[i].Status.ID)
		if err != nil {
			return false, err
		}
		if c.State == provisioner.ChainActive {
			return false, nil
		}
	}
	return true, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// simCluster is the simulator as the engine's cluster and history source
// (as eval's chain harness adapts it).
type simCluster struct{ *sim.Sim }

func (c simCluster) History(_ context.Context, since time.Time) ([]provisioner.Job, error) {
	return c.Sim.History(since), nil
}

// simClock is the simulator's logical clock as the engine's Clock.
type simClock struct{ s *sim.Sim }

func (c simClock) Now() time.Time { return c.s.Now() }
