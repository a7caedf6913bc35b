package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

var (
	_ provisioner.Cluster  = (*Sim)(nil)
	_ provisioner.Unpinner = (*Sim)(nil)
)

// Capabilities are the simulator's, as Slurm's: it queues jobs and lifts
// pending jobs' node lists (Unpin).
var Capabilities = provisioner.Capabilities{Queues: true, Unpins: true}

// Snapshot returns the pending and running jobs and the nodes at the
// logical now, as squeue/sinfo would (EstStart is the last backfill plan).
func (s *Sim) Snapshot(ctx context.Context) (*provisioner.Snapshot, error) {
	s.start()
	st := s.st
	snap := &provisioner.Snapshot{Time: s.Now(), Caps: Capabilities}
	snap.Nodes = make([]provisioner.Node, len(st.nodeNames))
	for i := range snap.Nodes {
		var parts []string
		for p := range st.partNames {
			if st.partMember[p][i] {
				parts = append(parts, st.partNames[p])
			}
		}
		snap.Nodes[i] = provisioner.Node{
			Name: st.nodeNames[i], State: provisioner.NodeUp,
			CPUs: int(st.nodeCPUs[i]), CPUsUsed: int(st.nodeCPUs[i] - s.nodeFreeC[i]),
			GPUs: int(st.nodeGPUs[i]), GPUsUsed: int(st.nodeGPUs[i] - s.nodeFreeG[i]),
			GPUType: st.nodeType[i], Partitions: parts,
		}
	}
	snap.Jobs = make([]provisioner.Job, 0, len(s.pending)+len(s.running)+len(s.latent))
	for _, lst := range [][]int32{s.running, s.pending, s.latent} {
		for _, j := range lst {
			if st := s.dyns[j].state; st == stPending || st == stRunning || st == stFuture {
				snap.Jobs = append(snap.Jobs, s.snapJob(j)) // a latent job (stFuture) is submitted: squeue lists it pending
			}
		}
	}
	return snap, nil
}

func (s *Sim) snapJob(j int32) provisioner.Job {
	sp, d := s.spec(j), &s.dyns[j]
	st := s.st
	job := provisioner.Job{
		ID: sp.id, Name: sp.name, User: s.users[sp.user], Account: st.acctOf(s, sp.assoc),
		Partition: st.partNames[sp.part], QOS: st.qosNames[sp.qos], State: stateNames[d.state],
		Submit: time.Unix(sp.submit, 0).UTC(), TimeLimit: time.Duration(sp.limit) * time.Second,
		Nodes: int(sp.nodes), GPUs: int(sp.nodes * sp.gpn), Priority: int64(d.prio), Comment: sp.comment,
	}
	if !d.held && d.state != stFuture {
		job.Eligible = time.Unix(d.elig, 0).UTC()
	}
	switch d.state {
	case stFuture: // submitted, its latency still running: pending, not yet seen by the scheduler
		job.Reason = provisioner.PendingPriority
	case stPending:
		job.Reason = provisioner.PendingPriority
		if d.held {
			job.Reason = provisioner.PendingDependency
			if d.begin > s.now {
				job.Reason = provisioner.PendingBeginTime
			}
		}
		if d.est > 0 {
			job.EstStart = time.Unix(d.est, 0).UTC()
		}
	case stRunning:
		job.Start = time.Unix(d.start, 0).UTC()
		for _, n := range s.allocPool[d.allocOff : d.allocOff+sp.nodes] {
			job.NodeList = append(job.NodeList, st.nodeNames[n])
		}
	}
	return job
}

func (st *static) acctOf(s *Sim, assoc int32) string { return s.acctNames[s.assocAcct[assoc]] }

// Submit adds a job at the logical now; its runtime comes from the runtime
// function (default: the full time limit). A main pass runs before the
// clock moves on, as slurmctld schedules on submission. The job runs as
// SetSubmitUser's user (default: a user named as the request's account),
// and where the configuration weighs recorded priorities
// (PriorityWeightRecorded) it is given one like the trace's jobs of its
// size (TypicalRecordedPriority), so that the same model ranks it among them.
func (s *Sim) Submit(ctx context.Context, req provisioner.SubmitRequest) (string, error) {
	s.start()
	s.submitted++
	id := "sim-" + strconv.Itoa(s.submitted)
	for {
		if _, dup := s.ids[id]; !dup {
			break
		}
		s.submitted++
		id = "sim-" + strconv.Itoa(s.submitted)
	}
	nodes := req.Nodes
	if nodes <= 0 {
		nodes = 1
	}
	js := JobSpec{
		ID: id, Name: req.Name, User: cmp.Or(s.submitUser, req.Account), Account: req.Account, Partition: req.Partition,
		QOS: req.QOS, Submit: s.Now(), TimeLimit: req.TimeLimit, Nodes: nodes, GPUs: req.GPUs,
		Depend: req.Dependency.String(), Comment: req.Comment, NodeList: req.NodeList, Exclude: req.Exclude,
	}
	if s.st.cfg.PriorityWeightRecorded != 0 {
		js.RecordedPriority = s.TypicalRecordedPriority(nodes)
	}
	j := int32(s.numJobs())
	sp, err := s.makeSpec(js, j)
	if err != nil {
		s.submitted--
		return "", err
	}
	if s.runtimeFn != nil {
		r := req
		r.TimeLimit = time.Duration(sp.limit) * time.Second
		sp.runtime = int64(s.runtimeFn(r) / time.Second)
	} else {
		sp.runtime = sp.limit
	}
	if err := s.setID(id, j); err != nil {
		return "", err
	}
	s.extra = append(s.extra, sp)
	s.dyns = append(s.dyns, dyn{state: stFuture, start: -1, end: -1})
	if !req.Begin.IsZero() {
		s.dyns[j].begin = req.Begin.Unix()
	}
	s.maxLimit = max(s.maxLimit, sp.limit)
	s.arrive(j)
	return id, nil
}

// Cancel cancels a pending or running job at the logical now.
func (s *Sim) Cancel(ctx context.Context, jobID string) error {
	j, ok := s.lookup(jobID)
	if !ok {
		return fmt.Errorf("sim: cancel %s: %w", jobID, provisioner.ErrNotFound)
	}
	d := &s.dyns[j]
	switch d.state {
	case stPending:
		s.stopAccrual(j)
		d.state = stCancelled
		d.end = s.now
		s.removePending(j)
		s.dirtyMain, s.dirtyBF = true, true
		if len(s.waiters) > 0 {
			s.checkWaiters()
		}
	case stRunning:
		d.state = stCancelled
		d.gen++
		s.finish(j)
	case stFuture:
		d.state = stCancelled
		d.end = s.now
		s.latent = remove(s.latent, j)
	}
	return nil
}

// Unpin lifts the node list of a pending job submitted to the simulator
// (provisioner.Unpinner; scontrol update ReqNodeList= on Slurm): it may
// then start on any node of its partition it does not exclude. A job that
// is no longer pending is left as it is.
func (s *Sim) Unpin(ctx context.Context, jobID string) error {
	j, ok := s.lookup(jobID)
	if !ok {
		return fmt.Errorf("sim: unpin %s: %w", jobID, provisioner.ErrNotFound)
	}
	if int(j) < len(s.specs) {
		return fmt.Errorf("sim: unpin %s: a job of the replayed trace has no node list to lift", jobID)
	}
	if s.dyns[j].state != stPending {
		return nil
	}
	sp := s.spec(j)
	sp.allowed, sp.required = sp.unpinned, false
	s.dirtyMain, s.dirtyBF = true, true
	return nil
}

// Signal signals a running job. With Config.Checkpoint set the job
// checkpoints and exits that long after (as a segment does when `mirage
// handoff` asks it to), unless it ends sooner anyway: it ends COMPLETED and
// its nodes are free then, for every job of the cluster. Without it the
// signal changes nothing.
func (s *Sim) Signal(ctx context.Context, jobID string, signal string) error {
	j, ok := s.lookup(jobID)
	if !ok || s.dyns[j].state != stRunning {
		return fmt.Errorf("sim: signal %s: %w", jobID, provisioner.ErrNotFound)
	}
	if s.checkpoint > 0 {
		s.endBy(j, s.now+s.checkpoint)
	}
	return nil
}

// FinishAt makes running job jobID finish its work and exit 0 (COMPLETED)
// at t, if it would otherwise run longer: a work-conserving chain decides
// as a segment starts how long its remaining work takes. A t at or before
// now ends it at now. ErrNotFound if the job is not running.
func (s *Sim) FinishAt(jobID string, t time.Time) error {
	j, ok := s.lookup(jobID)
	if !ok || s.dyns[j].state != stRunning {
		return fmt.Errorf("sim: finish %s: %w", jobID, provisioner.ErrNotFound)
	}
	s.endBy(j, max(t.Unix(), s.now))
	return nil
}

// History returns the jobs that started or finished at or after since, in
// start order (what sacct would list), for policies' Observation.History.
// It reads the start log backwards only as far as since − the longest
// limit: a job that started earlier has ended before since (runtimes are
// capped at limits), so the cost follows the jobs returned, not the trace.
func (s *Sim) History(since time.Time) []provisioner.Job {
	from := since.Unix()
	var idx []int32
	for k := len(s.startLog) - 1; k >= 0; k-- {
		e := s.startLog[k]
		if e.t < from-s.maxLimit {
			break
		}
		d := &s.dyns[e.j]
		if d.start != e.t {
			continue // requeued since: a later entry (or none, while pending) stands for it
		}
		if d.start >= from || d.end >= from || d.state == stRunning {
			idx = append(idx, e.j)
		}
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(s.dyns[a].start, s.dyns[b].start); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	idx = slices.Compact(idx)
	out := make([]provisioner.Job, len(idx))
	for i, j := range idx {
		out[i] = s.snapJob(j)
		if d := &s.dyns[j]; d.state > stRunning {
			out[i].Start = time.Unix(d.start, 0).UTC()
			out[i].End = time.Unix(d.end, 0).UTC()
			for _, n := range s.allocPool[d.allocOff : d.allocOff+s.spec(j).nodes] { // sacct's NodeList
				out[i].NodeList = append(out[i].NodeList, s.st.nodeNames[n])
			}
		}
	}
	return out
}

// TypicalWindow is how far back TypicalUser and TypicalRecordedPriority
// look at the replayed trace's jobs (only those: not jobs submitted
// through the seam) for what a job submitted now is like.
const TypicalWindow = 7 * 24 * time.Hour

// recentTraceStarts calls fn with the replayed trace's jobs that started
// in the TypicalWindow before now, the latest start first, until fn
// returns false. Only what has happened by now counts: a job started later
// (or never) is not looked at.
func (s *Sim) recentTraceStarts(fn func(sp *spec) bool) {
	from := s.now - int64(TypicalWindow/time.Second)
	for k := len(s.startLog) - 1; k >= 0; k-- {
		e := s.startLog[k]
		if e.t < from {
			return
		}
		if int(e.j) >= len(s.specs) || s.dyns[e.j].start != e.t {
			continue // submitted through the seam, or requeued since (its later start stands for it)
		}
		if !fn(&s.specs[e.j]) {
			return
		}
	}
}

// TypicalUser returns the user and account of a typical user of the
// replayed trace for a job of the given size (nodes) submitted now: of the
// associations whose jobs of that size started in the TypicalWindow before
// now (of any size, if none), the one with the median fair-share factor,
// neither among the most nor the least served (ties, as when fair-share is
// not weighed, in the order of their latest such start, latest first). ok
// is false if no job started in the window. A chain injected as that user
// is ranked, by fair-share, like the trace's other users' jobs; as a user
// of its own it would have the best factor there is.
func (s *Sim) TypicalUser(nodes int) (user, account string, ok bool) {
	var same, anySize []int32 // associations, by latest start first
	seen := map[int32]bool{}
	s.recentTraceStarts(func(sp *spec) bool {
		if !seen[sp.assoc] {
			seen[sp.assoc] = true
			anySize = append(anySize, sp.assoc)
		}
		if int(sp.nodes) == nodes && !slices.Contains(same, sp.assoc) {
			same = append(same, sp.assoc)
		}
		return true
	})
	cands := same
	if len(cands) == 0 {
		cands = anySize
	}
	if len(cands) == 0 {
		return "", "", false
	}
	f := make(map[int32]float64, len(cands))
	for _, a := range cands {
		f[a] = 1
		if s.st.cfg.PriorityWeightFairshare != 0 && !s.st.basic {
			f[a] = s.fairshare(a)
		}
	}
	slices.SortStableFunc(cands, func(a, b int32) int { return cmp.Compare(f[a], f[b]) })
	account, user, _ = strings.Cut(s.assocs[cands[len(cands)/2]], "\x00") // "account\x00user" (intern)
	return user, account, true
}

// TypicalRecordedPriority is the recorded priority (JobSpec.RecordedPriority)
// of a typical job of the given size submitted now: the median over the
// replayed trace's jobs of that size that recorded one and started in the
// TypicalWindow before now (of any size, if none of that size did; 0 if
// none did at all). It uses nothing that happens after now.
func (s *Sim) TypicalRecordedPriority(nodes int) float64 {
	var same, all []float64
	s.recentTraceStarts(func(sp *spec) bool {
		if sp.recPrio > 0 {
			all = append(all, sp.recPrio)
			if int(sp.nodes) == nodes {
				same = append(same, sp.recPrio)
			}
		}
		return true
	})
	if len(same) == 0 {
		same = all
	}
	slices.Sort(same)
	return quantile(same, 0.5) // the median: the two middle values' mean for an even count

}

// SetSubmitUser makes the jobs submitted through Submit from now on run as
// user, as sbatch submits as the user who runs it; "" restores the
// default, a user named as each request's account. A fork keeps it.
func (s *Sim) SetSubmitUser(user string) { s.submitUser = user }
