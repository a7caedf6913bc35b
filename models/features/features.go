package features

import (
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// SchemaID identifies a feature schema: models remember the one they were
// trained on and refuse another (ErrSchemaMismatch).
type SchemaID struct {
	Name    string   `json:"name"`             // schema family
	Version int      `json:"version"`          // bumped on any change of meaning, order or count
	Fields  []string `json:"fields,omitempty"` // field names, in vector order
}

// FeatureSchemaName is the family name of the chain policies' features.
const FeatureSchemaName = "mirage-chain"

// FeatureSchemaVersion is the chain schema's current version; bump it on
// any change to computeFeatures that touches its fields (meaning, order or
// count). v4 is v2's 72 fields again (v3 added the wait fields below, which
// cost a third of a decision and did not help the chain policies).
const FeatureSchemaVersion = 4

// WaitSchemaName is the family name of the wait predictor's features: the
// chain fields plus the plan places and expected-runtime plans (the v3
// fields of the chain schema, which the wait predictor is trained on).
const WaitSchemaName = "mirage-wait"

// WaitSchemaVersion is the wait schema's current version.
const WaitSchemaVersion = 1

// Percentiles used for every distribution feature (the published design's 0/25/50/75/100).
var featurePercentiles = []float64{0, 0.25, 0.5, 0.75, 1}

// partitionBuckets is the width of the hashed one-hot partition encoding.
const partitionBuckets = 4

// HistoryStarts is how many recent starts the history features look at
// (the `average` baseline's 100).
const HistoryStarts = 100

// schemaOf names the fields computeFeatures writes for one family.
func schemaOf(name string, version int, wait bool) SchemaID {
	w := &featureWriter{names: []string{}, scratch: new(featureScratch)}
	computeFeatures(w, provisioner.Observe(time.Time{}, &provisioner.Snapshot{}, nil, nil, nil, provisioner.SubmitRequest{}, nil), wait)
	return SchemaID{Name: name, Version: version, Fields: w.names}
}

var (
	chainSchema = schemaOf(FeatureSchemaName, FeatureSchemaVersion, false)
	waitSchema  = schemaOf(WaitSchemaName, WaitSchemaVersion, true)
)

func cloneSchema(s SchemaID) SchemaID {
	s.Fields = slices.Clone(s.Fields)
	return s
}

// Schema returns the chain policies' feature schema (name, version, field names).
func Schema() SchemaID { return cloneSchema(chainSchema) }

// WaitSchema returns the wait predictor's feature schema.
func WaitSchema() SchemaID { return cloneSchema(waitSchema) }

// CurrentSchema returns the schema this build computes for a family name
// (a model's Meta.Schema.Name); false for an unknown family.
func CurrentSchema(name string) (SchemaID, bool) {
	switch name {
	case FeatureSchemaName:
		return Schema(), true
	case WaitSchemaName:
		return WaitSchema(), true
	}
	return SchemaID{}, false
}

// NumFeatures is the length of a chain feature vector.
func NumFeatures() int { return len(chainSchema.Fields) }

// NumWaitFeatures is the length of a wait feature vector.
func NumWaitFeatures() int { return len(waitSchema.Fields) }

// ErrNoSnapshot: an observation without a cluster snapshot.
var ErrNoSnapshot = errors.New("observation has no snapshot")

// Features computes the chain schema's feature vector from one
// observation. It is pure: the same observation gives the same vector, from
// the simulator and from squeue/sacct alike. All durations are in hours.
// WaitFeatures computes the wait schema's vector: the same fields with the
// wait-only ones (marked "wait schema") inserted before the scheduler
// estimates.
//
// Fields, in order (see Schema().Fields and WaitSchema().Fields for the names):
//   - pending jobs: count, requested nodes (sum), requested GPUs (sum), and
//     the 0/25/50/75/100th percentiles of time limit and time waited. (Time
//     run of a pending job is always zero, so unlike the published design it
//     is not repeated here.)
//   - running jobs: count, nodes, GPUs, and percentiles of time limit, time
//     waited (start − submit), time run and time left (limit − run, ≥ 0).
//   - cluster GPU supply: schedulable nodes, GPUs on them, free GPUs, idle
//     nodes (nothing allocated), and demand = pending GPUs / schedulable GPUs.
//   - predecessor (zeros and present=0 when absent): present, limit, nodes,
//     GPUs, wait, elapsed, time left, running (1/0).
//   - successor: limit (the chain's limit when the request has none), nodes, GPUs.
//   - fair-share standing of the chain's account, approximated from the
//     snapshot alone (Slurm's sshare is not portable to the simulator and
//     Kubernetes): its share of running GPUs, its share of pending+running
//     jobs, standing = GPU share − job share (positive: the account uses more
//     than its share, so its jobs tend to rank lower), and its pending jobs.
//   - partition: a one-hot of FNV-1a(partition) mod 4, and the share of
//     pending jobs in the same partition.
//   - history (Observation.History, the last 100 jobs that started in the 24
//     hours before now): mean wait (the `average` baseline), median and 90th
//     percentile wait, and the number of those starts (all of the last 24 hours').
//   - plan: the successor's wait as planned from the snapshot with every
//     job running to its limit (see planner): ahead of all pending jobs
//     and behind them (conservative backfill), and each minus the
//     predecessor's time left (the gap those plans imply).
//   - plan places (wait schema): the same plan with the successor behind the upper
//     half of the pending jobs, and behind the pending jobs an estimate of
//     its own priority puts ahead of it (ownPlace: the priority its
//     account's pending jobs would have at age zero).
//   - expected-runtime plan (wait schema): the median share of their limit that the
//     jobs of the history which ended in the last 24 hours ran for (0 when
//     fewer than 10 ended), and the four plan places again with every
//     job running for that share of its limit (its user's median when the
//     user has 3 such jobs; the successor keeps its whole limit, as Slurm
//     plans it).
//   - scheduler estimates (squeue --start, the simulator's backfill
//     plan; zeros where the backend has none): the share of pending jobs
//     with an estimated start, the latest estimated start among pending jobs
//     of the successor's node count (its queue would be behind them) and
//     among all pending jobs, in hours from now (≥ 0).
func Features(obs *provisioner.Observation) ([]float64, error) {
	return AppendFeatures(make([]float64, 0, NumFeatures()), obs)
}

// AppendFeatures appends the feature vector of obs to dst and returns it
// (allocation-free when dst has room).
func AppendFeatures(dst []float64, obs *provisioner.Observation) ([]float64, error) {
	return appendFeatures(dst, obs, false)
}

// WaitFeatures computes the wait schema's feature vector (see Features).
func WaitFeatures(obs *provisioner.Observation) ([]float64, error) {
	return AppendWaitFeatures(make([]float64, 0, NumWaitFeatures()), obs)
}

// AppendWaitFeatures is AppendFeatures for the wait schema.
func AppendWaitFeatures(dst []float64, obs *provisioner.Observation) ([]float64, error) {
	return appendFeatures(dst, obs, true)
}

func appendFeatures(dst []float64, obs *provisioner.Observation, wait bool) ([]float64, error) {
	if obs == nil || obs.Snapshot == nil {
		return dst, ErrNoSnapshot
	}
	sc := scratchPool.Get().(*featureScratch)
	w := &featureWriter{vals: dst, scratch: sc}
	computeFeatures(w, obs, wait)
	clear(sc.recent) // drop the pointers into obs
	scratchPool.Put(sc)
	return w.vals, nil
}

// featureScratch is the working memory of one feature vector, reused
// between vectors (a daemon computes one per chain every cycle).
type featureScratch struct {
	dists  []float64          // the seven job distributions
	starts []float64          // recent waits
	recent []*provisioner.Job // recent starts
}

var scratchPool = sync.Pool{New: func() any { return new(featureScratch) }}

// featureWriter collects values, and names when names is non-nil.
type featureWriter struct {
	vals    []float64
	names   []string
	scratch *featureScratch // working memory (from scratchPool)
}

func (w *featureWriter) add(name string, v float64) {
	if w.names != nil {
		w.names = append(w.names, name)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	w.vals = append(w.vals, v)
}

// addPercentiles sorts vals in place and adds one field per featurePercentiles.
func (w *featureWriter) addPercentiles(prefix string, vals []float64) {
	sort.Float64s(vals)
	for _, q := range featurePercentiles {
		w.add(w.name(prefix, "_p", int(q*100)), Percentile(vals, q))
	}
}

// name is prefix+sep+i when the writer collects names, else "" (building
// names on every vector was a measurable share of its cost).
func (w *featureWriter) name(prefix, sep string, i int) string {
	if w.names == nil {
		return ""
	}
	return prefix + sep + itoa(i)
}

// Percentile returns the q-quantile (0 ≤ q ≤ 1) of sorted values with linear
// interpolation between closest ranks (numpy's default); 0 when empty.
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	pos := q * float64(n-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if lo == hi {
		return sorted[lo]
	}
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [8]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	return string(b[p:])
}

func hours(d time.Duration) float64 { return d.Hours() }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// computeFeatures is the single definition of both schemas (the wait
// schema when wait is set): field order here is the vector order.
func computeFeatures(w *featureWriter, obs *provisioner.Observation, wait bool) {
	snap := obs.Snapshot
	now := obs.Now
	if now.IsZero() {
		now = snap.Time
	}
	account := obs.Successor.Account
	partition := obs.Successor.Partition
	if obs.Chain != nil {
		if account == "" {
			account = obs.Chain.Account
		}
		if partition == "" {
			partition = obs.Chain.Partition
		}
	}

	// One pass over the jobs.
	var (
		nPend, nRun               int
		pendNodes, pendGPUs       float64
		runNodes, runGPUs         float64
		pendLimit, pendWait       []float64
		runLimit, runWait, runRun []float64
		runLeft                   []float64
		acctRunGPUs, acctJobs     float64
		acctPend, samePartPend    float64
	)
	// One backing array for the seven distributions (each at most len(Jobs)).
	nj := len(snap.Jobs)
	sc := w.scratch
	if cap(sc.dists) < 7*nj {
		sc.dists = make([]float64, 7*nj)
	}
	back := sc.dists[:7*nj]
	pendLimit, pendWait = back[0:0:nj], back[nj:nj:2*nj]
	runLimit, runWait, runRun, runLeft = back[2*nj:2*nj:3*nj], back[3*nj:3*nj:4*nj], back[4*nj:4*nj:5*nj], back[5*nj:5*nj:6*nj]
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		switch j.State {
		case provisioner.StatePending:
			nPend++
			pendNodes += float64(j.Nodes)
			pendGPUs += float64(j.GPUs)
			pendLimit = append(pendLimit, hours(j.TimeLimit))
			pendWait = append(pendWait, hours(j.Waited(now)))
			if account != "" && j.Account == account {
				acctPend++
				acctJobs++
			}
			if partition != "" && j.Partition == partition {
				samePartPend++
			}
		case provisioner.StateRunning:
			nRun++
			runNodes += float64(j.Nodes)
			runGPUs += float64(j.GPUs)
			run := j.Elapsed(now)
			runLimit = append(runLimit, hours(j.TimeLimit))
			runWait = append(runWait, hours(j.Waited(now)))
			runRun = append(runRun, hours(run))
			runLeft = append(runLeft, math.Max(0, hours(j.TimeLimit-run)))
			if account != "" && j.Account == account {
				acctRunGPUs += float64(j.GPUs)
				acctJobs++
			}
		}
	}

	w.add("pending_count", float64(nPend))
	w.add("pending_nodes", pendNodes)
	w.add("pending_gpus", pendGPUs)
	w.addPercentiles("pending_limit_h", pendLimit)
	w.addPercentiles("pending_wait_h", pendWait)

	w.add("running_count", float64(nRun))
	w.add("running_nodes", runNodes)
	w.add("running_gpus", runGPUs)
	w.addPercentiles("running_limit_h", runLimit)
	w.addPercentiles("running_wait_h", runWait)
	w.addPercentiles("running_run_h", runRun)
	w.addPercentiles("running_left_h", runLeft)

	var nodesUp, gpusUp, gpusFree, nodesIdle float64
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.State != provisioner.NodeUp {
			continue
		}
		nodesUp++
		gpusUp += float64(n.GPUs)
		gpusFree += float64(n.FreeGPUs())
		if n.GPUsUsed == 0 && n.CPUsUsed == 0 {
			nodesIdle++
		}
	}
	w.add("nodes_up", nodesUp)
	w.add("gpus_up", gpusUp)
	w.add("gpus_free", gpusFree)
	w.add("nodes_idle", nodesIdle)
	w.add("gpu_demand_ratio", pendGPUs/math.Max(1, gpusUp))

	if p := obs.Predecessor; p != nil {
		el := p.Elapsed(now)
		w.add("pred_present", 1)
		w.add("pred_limit_h", hours(p.TimeLimit))
		w.add("pred_nodes", float64(p.Nodes))
		w.add("pred_gpus", float64(p.GPUs))
		w.add("pred_wait_h", hours(p.Waited(now)))
		w.add("pred_elapsed_h", hours(el))
		w.add("pred_left_h", math.Max(0, hours(p.TimeLimit-el)))
		w.add("pred_running", b2f(p.State == provisioner.StateRunning))
	} else {
		for _, n := range []string{"pred_present", "pred_limit_h", "pred_nodes", "pred_gpus", "pred_wait_h", "pred_elapsed_h", "pred_left_h", "pred_running"} {
			w.add(n, 0)
		}
	}

	succLimit := obs.Successor.TimeLimit
	if succLimit == 0 && obs.Chain != nil {
		succLimit = obs.Chain.TimeLimit
	}
	w.add("succ_limit_h", hours(succLimit))
	w.add("succ_nodes", float64(obs.Successor.Nodes))
	w.add("succ_gpus", float64(obs.Successor.GPUs))

	gpuShare := 0.0
	if runGPUs > 0 {
		gpuShare = acctRunGPUs / runGPUs
	}
	jobShare := 0.0
	if nPend+nRun > 0 {
		jobShare = acctJobs / float64(nPend+nRun)
	}
	w.add("acct_gpu_share", gpuShare)
	w.add("acct_job_share", jobShare)
	w.add("acct_standing", gpuShare-jobShare)
	w.add("acct_pending", acctPend)

	bucket := -1
	if partition != "" {
		h := fnv.New32a()
		h.Write([]byte(partition))
		bucket = int(h.Sum32() % partitionBuckets)
	}
	for b := 0; b < partitionBuckets; b++ {
		w.add(w.name("partition_hash", "_", b), b2f(b == bucket))
	}
	partShare := 0.0
	if nPend > 0 {
		partShare = samePartPend / float64(nPend)
	}
	w.add("partition_pending_share", partShare)

	// History: the last HistoryStarts jobs that started in (now − provisioner.DefaultHistoryWindow, now], by start time.
	starts := sc.starts[:0]
	recent := sc.recent[:0]
	since := now.Add(-provisioner.DefaultHistoryWindow)
	for i := range obs.History {
		j := &obs.History[i]
		if j.Start.After(since) && !j.Start.After(now) { // a zero Start is before since
			recent = append(recent, j)
		}
	}
	sc.recent = recent          // kept whole: trimmed below
	day := float64(len(recent)) // every start of the last 24 hours
	slices.SortStableFunc(recent, func(a, b *provisioner.Job) int { return a.Start.Compare(b.Start) })
	if len(recent) > HistoryStarts {
		recent = recent[len(recent)-HistoryStarts:]
	}
	for _, j := range recent {
		starts = append(starts, hours(j.Waited(now)))
	}
	mean := 0.0
	if len(starts) > 0 {
		mean = meanOf(starts)
	}
	sort.Float64s(starts)
	w.add("hist_wait_mean_h", mean)
	w.add("hist_wait_p50_h", Percentile(starts, 0.5))
	w.add("hist_wait_p90_h", Percentile(starts, 0.9))
	w.add("hist_starts_24h", day)
	sc.starts = starts

	left := 0.0
	if p := obs.Predecessor; p != nil && p.State == provisioner.StateRunning {
		left = math.Max(0, hours(p.TimeLimit-p.Elapsed(now)))
	}
	shape := planShape{partition: partition, account: account, nodes: obs.Successor.Nodes, gpus: obs.Successor.GPUs, limit: succLimit}
	planner := newPlanner(snap, now, shape, wait)
	pl := planner.plan(nil)
	w.add("plan_wait_first_h", pl.first/3600)
	w.add("plan_wait_last_h", pl.last/3600)
	w.add("plan_gap_first_h", pl.first/3600-left)
	w.add("plan_gap_last_h", pl.last/3600-left)
	if wait {
		w.add("plan_wait_mid_h", pl.mid/3600)
		w.add("plan_wait_own_h", pl.own/3600)
		frac, byUser := runtimeFractions(obs.History, snap.Jobs, now)
		ex := planner.plan(func(j *provisioner.Job) float64 {
			if f, ok := byUser[j.User]; ok {
				return f
			}
			if frac == 0 {
				return 1
			}
			return frac
		})
		w.add("hist_runtime_frac", frac)
		w.add("plan_exp_first_h", ex.first/3600)
		w.add("plan_exp_mid_h", ex.mid/3600)
		w.add("plan_exp_own_h", ex.own/3600)
		w.add("plan_exp_last_h", ex.last/3600)
	}

	var withEst, shapeMax, allMax float64
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if j.State != provisioner.StatePending || j.EstStart.IsZero() {
			continue
		}
		withEst++
		h := math.Max(0, hours(j.EstStart.Sub(now)))
		allMax = math.Max(allMax, h)
		if j.Nodes == obs.Successor.Nodes && (partition == "" || j.Partition == partition) {
			shapeMax = math.Max(shapeMax, h)
		}
	}
	estShare := 0.0
	if nPend > 0 {
		estShare = withEst / float64(nPend)
	}
	w.add("est_pending_share", estShare)
	w.add("est_shape_latest_h", shapeMax)
	w.add("est_latest_h", allMax)
}

// runtimeFractions is the median share of their time limit that the jobs
// of history which ended in (now − provisioner.DefaultHistoryWindow, now] ran for, overall
// (0, unknown, with fewer than 10 such jobs) and for each user of jobs
// (the snapshot's) with at least 3, each in [0.05, 1]. Only the users of
// jobs are kept apart, as only they are planned: this runs on every
// decision (183 history jobs and 82 snapshot jobs on the LS6 state of
// BenchmarkDecideLS6).
func runtimeFractions(hist, jobs []provisioner.Job, now time.Time) (float64, map[string]float64) {
	group := map[string]int{} // user → index into shares
	for i := range jobs {
		if _, ok := group[jobs[i].User]; !ok {
			group[jobs[i].User] = len(group)
		}
	}
	shares := make([][]float64, len(group))
	all := make([]float64, 0, len(hist))
	since := now.Add(-provisioner.DefaultHistoryWindow) // ended after since, at or before now
	for i := range hist {
		j := &hist[i]
		if !j.End.After(since) || j.End.After(now) || j.Start.IsZero() || j.TimeLimit <= 0 {
			continue
		}
		f := j.End.Sub(j.Start).Seconds() / j.TimeLimit.Seconds()
		all = append(all, f)
		if k, ok := group[j.User]; ok {
			shares[k] = append(shares[k], f)
		}
	}
	med := func(r []float64) float64 {
		slices.Sort(r)
		return math.Min(1, math.Max(0.05, Percentile(r, 0.5)))
	}
	byUser := make(map[string]float64, len(group))
	for u, k := range group {
		if len(shares[k]) >= 3 {
			byUser[u] = med(shares[k])
		}
	}
	if len(all) < 10 {
		return 0, byUser
	}
	return med(all), byUser
}

// meanOf is the arithmetic mean of a non-empty slice (summed in order, as
// models.Mean does, so the history features keep their values).
func meanOf(y []float64) float64 {
	s := 0.0
	for _, v := range y {
		s += v
	}
	return s / float64(len(y))
}
