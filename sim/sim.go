package sim

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// Job states inside the simulator.
const (
	stFuture    uint8 = iota // not yet submitted
	stPending                // submitted, waiting
	stRunning                // running
	stCompleted              // ended before its limit
	stTimeout                // killed at its limit
	stCancelled              // cancelled (or dependency never satisfied)
	stPreempted              // preempted with PreemptMode=cancel
	stFailed                 // ended before its limit with a non-zero exit
)

var stateNames = [...]provisioner.JobState{
	stFuture: provisioner.StatePending, stPending: provisioner.StatePending, stRunning: provisioner.StateRunning,
	stCompleted: provisioner.StateCompleted, stTimeout: provisioner.StateTimeout,
	stCancelled: provisioner.StateCancelled, stPreempted: provisioner.StatePreempted,
	stFailed: provisioner.StateFailed,
}

// Dependency kinds.
const (
	depAfterOK uint8 = iota
	depAfterAny
)

type dep struct {
	kind uint8
	job  int32
}

// JobSpec is one job as the simulator takes it in.
type JobSpec struct {
	ID        string        // job id (unique); empty gets a generated one
	Name      string        // job name (singleton dependencies)
	User      string        // user
	Account   string        // account (empty: the user)
	Partition string        // partition (empty: the default)
	QOS       string        // QOS (empty: normal)
	Submit    time.Time     // submission time
	TimeLimit time.Duration // limit (0: partition default)
	Runtime   time.Duration // true runtime, hidden from the scheduler; ≥ limit means TIMEOUT
	Nodes     int           // nodes (≥ 1)
	GPUs      int           // GPUs in total (spread evenly over the nodes)
	CPUs      int           // CPUs in total (0: one per node)
	Fail      bool          // ends FAILED (non-zero exit) unless it times out; breaks afterok
	Depend    string        // "afterok:ID[:ID]", "afterany:ID", "singleton", comma-separated
	Comment   string        // free text carried to snapshots
	NodeList  []string      // only these nodes (sbatch --nodelist used as a placement hint); empty = any
	Exclude   []string      // never these nodes (sbatch --exclude)
	// RecordedPriority is the priority the real scheduler recorded for the
	// job, scaled to [0, 1] (FromTraces: by the trace's largest); it counts
	// with Config.PriorityWeightRecorded. 0: none.
	RecordedPriority float64
}

// spec is the immutable part of a job, shared between forks.
type spec struct {
	id        string
	name      string
	comment   string
	user      int32
	assoc     int32
	part      int16
	qos       int16
	submit    int64
	limit     int64
	runtime   int64
	nodes     int32
	gpn       int32   // GPUs per node
	cpn       int32   // CPUs per node
	recPrio   float64 // JobSpec.RecordedPriority
	sizeTerm  float64 // the job-size term of its priority (it never changes)
	fail      bool
	singleton bool
	deps      []dep
	allowed   []bool // per node: may run there (NodeList/Exclude); nil = any node
	unpinned  []bool // allowed without the NodeList (Exclude only; nil = any node), for Unpin
	required  bool   // allowed comes from a NodeList naming at least its nodes (sbatch --nodelist), until Unpin
}

// dyn is the mutable part of a job.
type dyn struct {
	state    uint8
	held     bool // dependency not yet satisfied
	lat      bool // its latency (Config.LatencyTable) was drawn
	holding  bool // ended, its nodes still held (Config.EndLatencyTable)
	gen      uint32
	start    int64
	end      int64
	elig     int64
	prio     float64
	allocOff int32
	requeues int32
	est      int64 // backfill's planned start (squeue --start), 0 if none
	early    int64 // when a signal makes it end (Config.Checkpoint), 0 if none
	begin    int64 // earliest start (sbatch --begin), 0 if none
	accrue   int64 // while pending: when its age began to accrue (-1: it does not accrue, see startAccrual)
	seq      int64 // its submission's ordinal (1, 2, …; 0: not submitted yet): priority/basic's order
}

type event struct {
	t   int64
	job int32
	gen uint32
}

// eventHeap is a binary min-heap of events ordered by (t, job): the
// algorithm of container/heap, typed so that pushing and popping an event
// does not box it in an interface (one allocation each).
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].job < h[j].job
}

// push adds ev (container/heap.Push).
func (h *eventHeap) push(ev event) {
	*h = append(*h, ev)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

// pop removes and returns the earliest event (container/heap.Pop).
func (h *eventHeap) pop() event {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	for i := 0; ; {
		j := 2*i + 1 // left child
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && q.less(j2, j) {
			j = j2 // right child
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	ev := q[n]
	*h = q[:n]
	return ev
}

// static is the configuration-derived data shared by all forks.
type static struct {
	cfg         Config
	nodeNames   []string
	nodeCPUs    []int32
	nodeGPUs    []int32
	nodeType    []string
	partNames   []string
	partNodes   [][]int32
	partMember  [][]bool
	partMax     []int64
	partDef     []int64
	partExcl    []bool
	partFactor  []float64
	partOverlap [][]int16
	partMaxG    []int32
	defPart     int16
	qosNames    []string
	qosFactor   []float64
	qosPreempt  []bool
	qosRequeue  []bool
	totalNodes  int
	maxAge      float64 // PriorityMaxAge in seconds
	basic       bool    // PriorityType=priority/basic
	preempting  bool    // some QOS is preemptible: jobs that can preempt are queued first
	maxAccrue   int32   // MaxJobsAccrue (0: no limit, and with PriorityAccrueAlways)
	minAgeRes   int64   // bf_min_age_reserve in seconds
}

// Sim is the simulator state. Create with New; copy with Fork.
type Sim struct {
	st *static

	specs []spec // loaded jobs, immutable, shared by forks
	extra []spec // jobs submitted through the Cluster seam (per fork)
	dyns  []dyn

	// name tables (append-only, cap-trimmed on Fork)
	ids        map[string]int32 // ids of loaded jobs (read-only once running; shared by forks)
	extraIDs   map[string]int32 // ids of jobs submitted through the seam (per fork)
	users      []string
	userIdx    map[string]int32
	assocs     []string // "account\x00user"
	assocAcct  []int32
	acctNames  []string
	namesOwned bool

	now     int64
	cursor  int // next trace job (specs sorted by submit up to nTrace)
	nTrace  int // number of jobs loaded before the run (sorted by submit)
	events  eventHeap
	pending []int32 // pending jobs, sorted by priority at each pass
	// s.pending[:sortedLen] is in sortPending's order: jobs appended since
	// come after it, removals keep its order (removePending), and only
	// recomputed priorities (recalc) unsort it all
	sortedLen  int
	running    []int32
	byEnd      []runEnd // the running jobs by planned end (addByEnd)
	waiters    []int32  // pending jobs held by dependencies
	requeued   []int32  // jobs requeued by preemption during a main pass
	latent     []int32  // jobs submitted whose latency (Config.LatencyTable) still runs: squeue lists them pending
	allocPool  []int32  // node indices of allocations
	nodeFreeG  []int32
	nodeFreeC  []int32
	nodeJobs   []int32
	usage      []float64 // decayed usage per association (GPU- or node-seconds)
	accruing   []int32   // per user: pending jobs accruing age (kept only with MaxJobsAccrue)
	submits    int64     // submissions so far (dyn.seq)
	submitUser string    // user of the jobs submitted through Submit ("": the request's account; SetSubmitUser)
	usageTotal float64   // sum of usage, as of the last recalc
	acctUsers  []int32   // associations per account
	usageLast  int64
	nextSched  int64
	nextBF     int64
	nextCalc   int64
	nextTick   int64
	dirtyMain  bool
	mainAt     int64    // when the event-triggered main pass runs (never if none due)
	rng        rand.PCG // seeded source for scheduling latency (a value: forks copy its state)
	dirtyBF    bool
	started    bool
	watch      int32 // job whose start stops RunUntilStart, or -1
	tickEvery  int64
	tickFn     func(now time.Time, c provisioner.Cluster)
	runtimeFn  func(req provisioner.SubmitRequest) time.Duration
	progressFn func(now int64)
	startFn    func(jobID string) // called as each job starts (OnStart)
	checkpoint int64              // seconds a signalled job takes to checkpoint and exit (Config.Checkpoint, SetCheckpoint)
	submitted  int                // jobs submitted through the Cluster seam (id counter)

	// startLog lists every start in time order (append-only, cap-trimmed on
	// Fork); an entry is stale when the job was requeued and started again.
	// With maxLimit (the longest limit of any job) it bounds History's scan:
	// a job that started before since − maxLimit has ended before since.
	startLog []startEntry
	maxLimit int64

	plansUnread bool // during a run whose backfill plans nobody can read (run)
	bfSkipped   int  // backfill passes skipped for it (tests read it)

	// memos of pure functions (a fork may keep them)
	decayDT int64   // the last usage decay's step (seconds) ...
	decayF  float64 // ... and its factor (recalc)
	fsEpoch uint64  // bumped when every association's fair-share factor may change (≥ 1 once an association exists: intern bumps it)

	// scratch (not copied on Fork)
	passHeld []bool // during mainPass: nodes required by a higher-priority job that could not start (nil: none)
	prof     profile
	scratch  []int32
	fsAt     []uint64  // per association: the fsEpoch its fsVal was computed in
	fsVal    []float64 // per association: the fair-share factor (fairshare)
}

// startEntry is one start: job j started at t.
type startEntry struct {
	t int64
	j int32
}

// spec returns job j's immutable record.
func (s *Sim) spec(j int32) *spec {
	if int(j) < len(s.specs) {
		return &s.specs[j]
	}
	return &s.extra[int(j)-len(s.specs)]
}

func (s *Sim) numJobs() int { return len(s.specs) + len(s.extra) }

// ErrUnknownJob is returned for a job id the simulator does not hold.
var ErrUnknownJob = errors.New("sim: unknown job")

// New builds an empty simulator for cfg.
func New(cfg Config) (*Sim, error) {
	if len(cfg.Nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrConfig)
	}
	for _, l := range slices.Concat(cfg.LatencyTable, cfg.EndLatencyTable) {
		if l < 0 {
			return nil, fmt.Errorf("%w: negative latency %s in the latency table", ErrConfig, l)
		}
	}
	d := Defaults()
	if cfg.SchedInterval <= 0 {
		cfg.SchedInterval = d.SchedInterval
	}
	if cfg.BFInterval <= 0 {
		cfg.BFInterval = d.BFInterval
	}
	if cfg.BFResolution <= 0 {
		cfg.BFResolution = time.Second
	}
	if cfg.BFWindow <= 0 {
		cfg.BFWindow = d.BFWindow
	}
	if cfg.BFMaxJobTest <= 0 {
		cfg.BFMaxJobTest = d.BFMaxJobTest
	}
	if cfg.PriorityCalcPeriod <= 0 {
		cfg.PriorityCalcPeriod = d.PriorityCalcPeriod
	}
	if cfg.PriorityMaxAge <= 0 {
		cfg.PriorityMaxAge = d.PriorityMaxAge
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = d.TickInterval
	}
	switch cfg.PriorityType {
	case "":
		cfg.PriorityType = d.PriorityType
	case PriorityBasic, PriorityMultifactor:
	default:
		return nil, fmt.Errorf("%w: PriorityType %q: want %s or %s", ErrConfig, cfg.PriorityType, PriorityBasic, PriorityMultifactor)
	}
	if cfg.MaxJobsAccrue < 0 || cfg.BFMaxJobUser < 0 || cfg.BFMinAgeReserve < 0 {
		return nil, fmt.Errorf("%w: MaxJobsAccrue %d, bf_max_job_user %d, bf_min_age_reserve %s: want ≥ 0", ErrConfig, cfg.MaxJobsAccrue, cfg.BFMaxJobUser, cfg.BFMinAgeReserve)
	}
	st := &static{cfg: cfg, totalNodes: len(cfg.Nodes), maxAge: cfg.PriorityMaxAge.Seconds(),
		basic: cfg.PriorityType == PriorityBasic, minAgeRes: int64(cfg.BFMinAgeReserve / time.Second)}
	if !cfg.PriorityAccrueAlways {
		st.maxAccrue = int32(min(cfg.MaxJobsAccrue, math.MaxInt32))
	}
	idx := map[string]int32{}
	for i, n := range cfg.Nodes {
		if _, dup := idx[n.Name]; dup {
			return nil, fmt.Errorf("%w: duplicate node %q", ErrConfig, n.Name)
		}
		idx[n.Name] = int32(i)
		st.nodeNames = append(st.nodeNames, n.Name)
		st.nodeCPUs = append(st.nodeCPUs, int32(max(n.CPUs, 1)))
		st.nodeGPUs = append(st.nodeGPUs, int32(n.GPUs))
		st.nodeType = append(st.nodeType, n.GPUType)
	}
	parts := cfg.Partitions
	if len(parts) == 0 {
		parts = []PartitionConfig{{Name: "batch", Exclusive: true, Default: true}}
	}
	maxPF := 0
	for _, p := range parts {
		maxPF = max(maxPF, p.PriorityJobFactor)
	}
	st.defPart = -1
	for pi, p := range parts {
		var nodes []int32
		member := make([]bool, len(cfg.Nodes))
		if len(p.Nodes) == 0 {
			for i := range cfg.Nodes {
				nodes = append(nodes, int32(i))
				member[i] = true
			}
		}
		for _, name := range p.Nodes {
			i, ok := idx[name]
			if !ok {
				return nil, fmt.Errorf("%w: partition %s: unknown node %q", ErrConfig, p.Name, name)
			}
			nodes = append(nodes, i)
			member[i] = true
		}
		st.partNames = append(st.partNames, p.Name)
		st.partNodes = append(st.partNodes, nodes)
		st.partMember = append(st.partMember, member)
		mx := int64(p.MaxTime / time.Second)
		df := int64(p.DefaultTime / time.Second)
		if df == 0 {
			df = mx
		}
		st.partMax = append(st.partMax, mx)
		st.partDef = append(st.partDef, df)
		st.partExcl = append(st.partExcl, p.Exclusive)
		mg := int32(0)
		for _, n := range nodes {
			mg = max(mg, st.nodeGPUs[n])
		}
		st.partMaxG = append(st.partMaxG, mg)
		f := 0.0
		if maxPF > 0 {
			f = float64(p.PriorityJobFactor) / float64(maxPF)
		}
		st.partFactor = append(st.partFactor, f)
		if p.Default && st.defPart < 0 {
			st.defPart = int16(pi)
		}
	}
	if st.defPart < 0 {
		st.defPart = 0
	}
	for a := range st.partNames {
		var ov []int16
		for b := range st.partNames {
			for _, n := range st.partNodes[a] {
				if st.partMember[b][n] {
					ov = append(ov, int16(b))
					break
				}
			}
		}
		st.partOverlap = append(st.partOverlap, ov)
	}
	qos := append([]QOSConfig{{Name: "normal"}}, cfg.QOS...)
	maxQ := 0
	for _, q := range qos {
		maxQ = max(maxQ, q.Priority)
	}
	for _, q := range qos {
		st.qosNames = append(st.qosNames, q.Name)
		f := 0.0
		if maxQ > 0 {
			f = float64(q.Priority) / float64(maxQ)
		}
		st.qosFactor = append(st.qosFactor, f)
		st.qosPreempt = append(st.qosPreempt, q.Preemptible)
		st.preempting = st.preempting || q.Preemptible
		st.qosRequeue = append(st.qosRequeue, strings.EqualFold(q.PreemptMode, "requeue"))
	}
	s := &Sim{mainAt: never, rng: *rand.NewPCG(cfg.Seed, 0x6d6972616765), st: st, ids: map[string]int32{}, userIdx: map[string]int32{}, namesOwned: true, watch: -1,
		checkpoint: int64(cfg.Checkpoint / time.Second)}
	s.nodeFreeG = slices.Clone(st.nodeGPUs)
	s.nodeFreeC = slices.Clone(st.nodeCPUs)
	s.nodeJobs = make([]int32, len(st.nodeGPUs))
	s.tickEvery = int64(cfg.TickInterval / time.Second)
	s.runtimeFn = func(req provisioner.SubmitRequest) time.Duration { return req.TimeLimit }
	return s, nil
}

// Now is the simulator's logical clock.
func (s *Sim) Now() time.Time { return time.Unix(s.now, 0).UTC() }

// Config returns the configuration the simulator was built with (defaults filled in).
func (s *Sim) Config() Config { return s.st.cfg }

// SetRuntimeFunc sets how long a job submitted through Submit runs (default:
// its full time limit, the published protocol).
func (s *Sim) SetRuntimeFunc(f func(req provisioner.SubmitRequest) time.Duration) { s.runtimeFn = f }

// OnTick installs a decision callback run every interval of logical time
// (interval ≤ 0 keeps the configured TickInterval), after the scheduler's
// passes of that second; nil removes it. The callback may Submit and
// Cancel through c; a main pass follows at once.
func (s *Sim) OnTick(interval time.Duration, fn func(now time.Time, c provisioner.Cluster)) {
	if interval > 0 {
		s.tickEvery = int64(interval / time.Second)
	}
	s.tickFn = fn
	if s.started {
		s.nextTick = s.now + s.tickEvery
	}
}

// OnProgress installs a callback invoked with the logical time about once
// per simulated hour (for progress bars); nil removes it. It must not read
// the simulator: during a run to the end, pending jobs' planned starts are
// not kept up to date (see run).
func (s *Sim) OnProgress(fn func(now time.Time)) {
	if fn == nil {
		s.progressFn = nil
		return
	}
	s.progressFn = func(t int64) { fn(time.Unix(t, 0).UTC()) }
}

func (s *Sim) ownNames() {
	if s.namesOwned {
		return
	}
	uidx := make(map[string]int32, len(s.userIdx)+8)
	for k, v := range s.userIdx {
		uidx[k] = v
	}
	s.userIdx = uidx
	s.namesOwned = true
}

func (s *Sim) intern(user, account string) (int32, int32) {
	if account == "" {
		account = user
	}
	u, ok := s.userIdx["u\x00"+user]
	if !ok {
		s.ownNames()
		u = int32(len(s.users))
		s.users = append(s.users, user)
		s.userIdx["u\x00"+user] = u
	}
	a, ok := s.userIdx["a\x00"+account+"\x00"+user] // a lookup's key needs no allocation
	if !ok {
		key := account + "\x00" + user
		s.ownNames()
		ac, ok := s.userIdx["c\x00"+account]
		if !ok {
			ac = int32(len(s.acctNames))
			s.acctNames = append(s.acctNames, account)
			s.acctUsers = append(s.acctUsers, 0)
			s.userIdx["c\x00"+account] = ac
		}
		a = int32(len(s.assocs))
		s.assocs = append(s.assocs, key)
		s.assocAcct = append(s.assocAcct, ac)
		s.acctUsers[ac]++
		s.userIdx["a\x00"+key] = a
		s.usage = append(s.usage, 0)
		s.fsEpoch++ // the shares changed
	}
	return u, a
}

func (s *Sim) setID(id string, j int32) error {
	if _, dup := s.lookup(id); dup {
		return fmt.Errorf("%w: duplicate job id %q", ErrConfig, id)
	}
	if !s.started && len(s.extra) == 0 {
		s.ids[id] = j // loading: the shared map is still private
		return nil
	}
	if s.extraIDs == nil {
		s.extraIDs = map[string]int32{}
	}
	s.extraIDs[id] = j
	return nil
}

// lookup finds a job index by id.
func (s *Sim) lookup(id string) (int32, bool) {
	if j, ok := s.ids[id]; ok {
		return j, true
	}
	j, ok := s.extraIDs[id]
	return j, ok
}

// makeSpec validates and converts one job.
func (s *Sim) makeSpec(js JobSpec, j int32) (spec, error) {
	st := s.st
	var sp spec
	var err error
	sp.id = js.ID
	if sp.id == "" {
		sp.id = strconv.Itoa(int(j) + 1)
	}
	sp.name, sp.comment = js.Name, js.Comment
	sp.recPrio = min(max(js.RecordedPriority, 0), 1)
	if math.IsNaN(sp.recPrio) {
		sp.recPrio = 0 // no usable recorded priority
	}
	sp.user, sp.assoc = s.intern(js.User, js.Account)
	sp.part = st.defPart
	if js.Partition != "" {
		sp.part = -1
		for i, n := range st.partNames {
			if n == js.Partition {
				sp.part = int16(i)
			}
		}
		if sp.part < 0 {
			return sp, fmt.Errorf("%w: job %s: unknown partition %q", provisioner.ErrRejected, sp.id, js.Partition)
		}
	}
	if js.QOS != "" {
		sp.qos = -1
		for i, n := range st.qosNames {
			if n == js.QOS {
				sp.qos = int16(i)
			}
		}
		if sp.qos < 0 {
			return sp, fmt.Errorf("%w: job %s: unknown QOS %q", provisioner.ErrRejected, sp.id, js.QOS)
		}
	}
	sp.submit = js.Submit.Unix()
	sp.limit = int64(js.TimeLimit / time.Second)
	if sp.limit <= 0 {
		sp.limit = st.partDef[sp.part]
	}
	if mx := st.partMax[sp.part]; mx > 0 && sp.limit > mx {
		// Slurm without EnforcePartLimits lets the job wait forever; replays
		// cap it to the partition maximum instead so the job is simulated.
		sp.limit = mx
	}
	if sp.limit <= 0 {
		sp.limit = 365 * 86400
	}
	sp.runtime = int64(js.Runtime / time.Second)
	if sp.runtime < 0 {
		sp.runtime = 0
	}
	sp.nodes = int32(max(js.Nodes, 1))
	if js.GPUs > 0 {
		sp.gpn = int32((js.GPUs + int(sp.nodes) - 1) / int(sp.nodes))
	}
	sp.cpn = 1
	if js.CPUs > 0 {
		sp.cpn = int32((js.CPUs + int(sp.nodes) - 1) / int(sp.nodes))
	}
	if int(sp.nodes) > len(st.partNodes[sp.part]) {
		return sp, fmt.Errorf("%w: job %s: %d nodes > %d in partition %s", provisioner.ErrRejected, sp.id, sp.nodes, len(st.partNodes[sp.part]), st.partNames[sp.part])
	}
	sp.fail = js.Fail
	if len(js.NodeList) > 0 || len(js.Exclude) > 0 {
		if sp.allowed, err = s.allowedNodes(sp.id, js.NodeList, js.Exclude); err != nil {
			return sp, err
		}
		if len(js.NodeList) > 0 && len(js.Exclude) > 0 {
			sp.unpinned, _ = s.allowedNodes(sp.id, nil, js.Exclude)
		}
		sp.required = len(js.NodeList) >= int(sp.nodes)
	}
	deps, err := slurmfmt.ParseDependency(js.Depend)
	if err != nil {
		return sp, fmt.Errorf("%w: job %s: %v", provisioner.ErrRejected, sp.id, err)
	}
	for _, d := range deps {
		if d.Kind == "singleton" {
			sp.singleton = true
			continue
		}
		var k uint8
		switch d.Kind {
		case "afterok":
			k = depAfterOK
		case "afterany":
			k = depAfterAny
		default:
			return sp, fmt.Errorf("%w: job %s: unsupported dependency %q (the simulator knows afterok, afterany and singleton)", provisioner.ErrRejected, sp.id, d.Kind)
		}
		for _, id := range d.Jobs {
			t, found := s.lookup(id)
			if !found {
				return sp, fmt.Errorf("%w: job %s: dependency on unknown job %q", provisioner.ErrRejected, sp.id, id)
			}
			sp.deps = append(sp.deps, dep{kind: k, job: t})
		}
	}
	if cfg := &st.cfg; cfg.PriorityWeightJobSize != 0 {
		f := float64(sp.nodes) / float64(st.totalNodes)
		if cfg.PriorityFavorSmall {
			f = 1 - f
		}
		sp.sizeTerm = cfg.PriorityWeightJobSize * f
	}
	return sp, nil
}

// allowedNodes turns a node list and an exclusion list into a per-node mask;
// unknown node names are rejected, as sbatch rejects them.
func (s *Sim) allowedNodes(id string, list, exclude []string) ([]bool, error) {
	st := s.st
	find := func(name string) (int, error) {
		for i, n := range st.nodeNames {
			if n == name {
				return i, nil
			}
		}
		return -1, fmt.Errorf("%w: job %s: unknown node %q in the node list or exclusion", provisioner.ErrRejected, id, name)
	}
	allowed := make([]bool, len(st.nodeNames))
	if len(list) == 0 {
		for i := range allowed {
			allowed[i] = true
		}
	}
	for _, name := range list {
		i, err := find(name)
		if err != nil {
			return nil, err
		}
		allowed[i] = true
	}
	for _, name := range exclude {
		i, err := find(name)
		if err != nil {
			return nil, err
		}
		allowed[i] = false
	}
	return allowed, nil
}

// Load adds jobs to replay before the run starts. Jobs are sorted by submit
// time (stable, so equal submits keep their input order). Dependencies may
// only name jobs loaded earlier in the same or a previous call.
func (s *Sim) Load(jobs []JobSpec) error {
	if s.started || len(s.extra) > 0 {
		return errors.New("sim: Load after the run started (use Submit)")
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	bySubmit := func(a, b int) int { return jobs[a].Submit.Compare(jobs[b].Submit) }
	if !slices.IsSortedFunc(order, bySubmit) { // traces usually come in submit order
		slices.SortStableFunc(order, bySubmit)
	}
	if len(order) > 0 && s.nTrace > 0 && jobs[order[0]].Submit.Unix() < s.specs[s.nTrace-1].submit {
		return errors.New("sim: Load calls must come in submit order")
	}
	// ids first so dependencies can refer forward within the batch
	base := int32(len(s.specs))
	if len(s.ids) == 0 {
		s.ids = make(map[string]int32, len(jobs))
	}
	s.specs = slices.Grow(s.specs, len(jobs))
	s.dyns = slices.Grow(s.dyns, len(jobs))
	for k, i := range order {
		id := jobs[i].ID
		if id == "" {
			id = strconv.Itoa(int(base) + k + 1)
			jobs[i].ID = id
		}
		if err := s.setID(id, base+int32(k)); err != nil {
			return err
		}
	}
	nodes := 0
	for k, i := range order {
		sp, err := s.makeSpec(jobs[i], base+int32(k))
		if err != nil {
			return err
		}
		s.specs = append(s.specs, sp)
		s.dyns = append(s.dyns, dyn{state: stFuture, start: -1, end: -1})
		s.maxLimit = max(s.maxLimit, sp.limit)
		nodes += int(sp.nodes)
	}
	s.nTrace = len(s.specs)
	// room for every start's node list (requeues aside), so that starting
	// jobs does not copy the pool as it grows
	s.allocPool = slices.Grow(s.allocPool, nodes)
	return nil
}

func (s *Sim) start() {
	if s.started {
		return
	}
	s.started = true
	t0 := s.now
	if s.nTrace > 0 && (t0 == 0 || s.spec(0).submit < t0) {
		t0 = s.spec(0).submit
	}
	s.now = t0
	s.usageLast = t0
	s.nextSched = t0
	s.nextBF = t0 + int64(s.st.cfg.BFInterval/time.Second)
	s.nextCalc = t0
	s.nextTick = t0 + s.tickEvery
}

// SetStart sets the logical clock before the run starts (otherwise the
// first submit time).
func (s *Sim) SetStart(t time.Time) {
	if !s.started {
		s.now = t.Unix()
	}
}

const never = math.MaxInt64

// Run advances the clock until every job has finished or until the logical
// time until (zero: no bound). It returns the logical time reached.
func (s *Sim) Run(until time.Time) time.Time {
	u := int64(never)
	if !until.IsZero() {
		u = until.Unix()
	}
	s.run(u)
	return s.Now()
}

// RunUntilStart runs until job id leaves the pending state (starts, or is
// cancelled) or until the logical time deadline, whichever is first; it
// reports the job's start (zero if it has not started).
func (s *Sim) RunUntilStart(id string, deadline time.Time) (time.Time, error) {
	j, ok := s.lookup(id)
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %s", ErrUnknownJob, id)
	}
	if s.dyns[j].start < 0 && s.dyns[j].state <= stPending {
		s.watch = j
		s.run(deadline.Unix())
		s.watch = -1
	}
	if st := s.dyns[j].start; st >= 0 {
		return time.Unix(st, 0).UTC(), nil
	}
	return time.Time{}, nil
}

func (s *Sim) done() bool {
	return s.cursor >= s.nTrace && len(s.events) == 0 && len(s.running) == 0 && len(s.pending) == 0
}

func (s *Sim) run(until int64) {
	s.start()
	// A run to the end returns with no job pending (done: while one is,
	// recalcs keep it going), and without a decision callback, a start
	// callback or a watched job nothing reads the queue before then: no
	// one can see the backfill passes' planned starts, and a pass that
	// can start nothing is skipped (backfill). Starts and ends are the same.
	s.plansUnread = until == never && s.tickFn == nil && s.startFn == nil && s.watch < 0
	defer func() { s.plansUnread = false }()
	bfEvery := int64(s.st.cfg.BFInterval / time.Second)
	calcEvery := int64(s.st.cfg.PriorityCalcPeriod / time.Second)
	schedEvery := int64(s.st.cfg.SchedInterval / time.Second)
	nextProg := s.now
	for {
		if s.dirtyMain && s.started && s.now >= s.due() {
			s.mainPass() // a submit or cancel made between runs
		}
		if s.done() && (s.tickFn == nil || until == never) {
			return // nothing left (decision callbacks keep a bounded run going)
		}
		// 1. the next instant anything can happen
		t := int64(never)
		if s.cursor < s.nTrace {
			t = s.spec(int32(s.cursor)).submit
		}
		if len(s.events) > 0 && s.events[0].t < t {
			t = s.events[0].t
		}
		idle := len(s.pending) == 0
		if !idle {
			if s.st.cfg.Backfill && s.dirtyBF && s.nextBF < t {
				t = s.nextBF
			}
			if s.nextCalc < t {
				t = s.nextCalc
			}
		}
		if s.tickFn != nil && s.nextTick < t {
			t = s.nextTick
		}
		if s.dirtyMain && s.mainAt < t {
			t = s.mainAt
		}
		if t == never {
			return
		}
		if t > until {
			s.now = max(s.now, until)
			return
		}
		if t < s.now {
			t = s.now
		}
		s.now = t
		// keep cadences aligned to the clock when idle stretches were skipped
		if s.nextBF < t {
			s.nextBF += (t - s.nextBF + bfEvery - 1) / bfEvery * bfEvery
		}
		if s.nextCalc < t {
			s.nextCalc += (t - s.nextCalc + calcEvery - 1) / calcEvery * calcEvery
		}
		if s.nextSched < t {
			s.nextSched += (t - s.nextSched + schedEvery - 1) / schedEvery * schedEvery
		}
		// 2. ends
		for len(s.events) > 0 && s.events[0].t == t {
			ev := s.events.pop()
			s.handleEvent(ev)
		}
		// 3. submits
		for s.cursor < s.nTrace && s.spec(int32(s.cursor)).submit == t {
			s.arrive(int32(s.cursor))
			s.cursor++
		}
		// 4. priorities
		if t == s.nextCalc {
			s.recalc()
			s.nextCalc += calcEvery
		}
		// 5. main pass on events (and at sched_interval: no-op unless dirty)
		if t == s.nextSched {
			s.nextSched += schedEvery
		}
		if s.dirtyMain && t >= s.due() {
			s.mainPass()
		}
		// 6. backfill
		if t == s.nextBF {
			s.nextBF += bfEvery
			if s.st.cfg.Backfill && s.dirtyBF {
				s.backfill()
			}
		}
		// 7. decision callback, after the passes of the same second: a
		// daemon reads squeue some time into the second, after slurmctld
		// has scheduled what happened at its start (a real 22.05 run saw
		// the cluster full at x.66 s where a callback before the passes
		// saw the nodes its jobs were about to take as free). Its
		// submissions get a main pass at once.
		if s.tickFn != nil && t == s.nextTick {
			s.nextTick += s.tickEvery
			s.tickFn(s.Now(), s)
			if s.dirtyMain && t >= s.due() {
				s.mainPass()
			}
		}
		if s.progressFn != nil && t >= nextProg {
			s.progressFn(t)
			nextProg = t + 3600
		}
		if s.watch >= 0 && s.dyns[s.watch].state != stPending && s.dyns[s.watch].state != stFuture {
			return
		}
	}
}

// due returns when the event-triggered main pass runs: now plus a latency
// drawn once per pass from [0, SchedLatency] (whole seconds), modelling
// slurmctld's processing delay and the sub-second clock that sacct rounds
// (none with a LatencyTable: each job's own latency delays its arrival).
func (s *Sim) due() int64 {
	if s.mainAt == never {
		lat := int64(s.st.cfg.SchedLatency / time.Second)
		s.mainAt = s.now
		if lat > 0 && len(s.st.cfg.LatencyTable) == 0 {
			s.mainAt += int64(s.rng.Uint64() % uint64(lat+1))
		}
	}
	return s.mainAt
}

// OnStart sets fn to be called, at the logical now, whenever a job starts
// (what a job's own first lines see: a chain's successor runs `mirage
// handoff` there); nil removes it. fn may Signal jobs.
func (s *Sim) OnStart(fn func(jobID string)) { s.startFn = fn }

// SetCheckpoint sets how long a signalled job takes to checkpoint and exit
// (Config.Checkpoint) for this simulator (a fork keeps its own).
func (s *Sim) SetCheckpoint(d time.Duration) { s.checkpoint = int64(d / time.Second) }

// notifyStart tells OnStart's fn that job j started.
func (s *Sim) notifyStart(j int32) {
	if s.startFn != nil {
		s.startFn(s.spec(j).id)
	}
}

// endBy makes running job j end at t (COMPLETED: it checkpointed and
// exited) if it would otherwise end later.
func (s *Sim) endBy(j int32, t int64) {
	d := &s.dyns[j]
	sp := s.spec(j)
	if t >= d.start+min(sp.runtime, sp.limit) || d.early != 0 && t >= d.early {
		return
	}
	d.gen++ // the end event pushed at its start is now stale
	d.early = t
	s.events.push(event{t: t, job: j, gen: d.gen})
}

func (s *Sim) handleEvent(ev event) {
	j := ev.job
	d := &s.dyns[j]
	if ev.gen != d.gen {
		return // stale
	}
	switch d.state {
	case stFuture: // delayed submit
		s.arrive(j)
	case stPending: // its begin time came
		s.atBegin(j)
	case stCompleted, stTimeout, stFailed: // ended, its nodes held for its end latency
		if d.holding {
			d.holding = false
			s.release(j)
			s.dirtyMain, s.dirtyBF = true, true
		}
	case stRunning:
		sp := s.spec(j)
		if s.now-d.start >= sp.limit {
			d.state = stTimeout
		} else if d.early != 0 && s.now == d.early {
			d.state = stCompleted // checkpointed and exited when signalled
		} else if sp.fail {
			d.state = stFailed
		} else {
			d.state = stCompleted
		}
		s.finish(j)
	}
}

// arrive makes job j pending at now or, with a LatencyTable, after the
// latency it draws there (once per job).
func (s *Sim) arrive(j int32) {
	d := &s.dyns[j]
	if d.state != stFuture {
		return
	}
	if d.seq == 0 { // its submission (a latency may still delay its arrival)
		s.submits++
		d.seq = s.submits
	}
	if tab := s.st.cfg.LatencyTable; len(tab) > 0 && !d.lat {
		d.lat = true
		if lat := int64(tab[s.rng.Uint64()%uint64(len(tab))] / time.Second); lat > 0 {
			s.events.push(event{t: s.now + lat, job: j, gen: d.gen})
			s.latent = append(s.latent, j)
			return
		}
	}
	if len(s.latent) > 0 {
		s.latent = remove(s.latent, j)
	}
	d.state = stPending
	d.elig = s.now
	d.accrue = -1
	sp := s.spec(j)
	if len(sp.deps) > 0 || sp.singleton || d.begin > s.now {
		d.held = true
		s.waiters = append(s.waiters, j)
		s.deferTo(j, d.begin)
		s.checkWaiters() // may release it (startAccrual)
	} else {
		s.startAccrual(j)
	}
	d.prio = s.priority(j)
	s.pending = append(s.pending, j)
	s.dirtyMain, s.dirtyBF = true, true
}

// finish ends a job, releases its resources (after its end latency,
// Config.EndLatencyTable: until then its nodes stay held, as slurmctld's
// COMPLETING nodes) and wakes dependents.
func (s *Sim) finish(j int32) {
	d := &s.dyns[j]
	d.end = s.now
	s.running = remove(s.running, j)
	s.removeByEnd(j)
	if tab := s.st.cfg.EndLatencyTable; len(tab) > 0 {
		if lat := int64(tab[s.rng.Uint64()%uint64(len(tab))] / time.Second); lat > 0 {
			d.holding = true
			s.events.push(event{t: s.now + lat, job: j, gen: d.gen})
		}
	}
	if !d.holding {
		s.release(j)
	}
	s.dirtyMain, s.dirtyBF = true, true
	if len(s.waiters) > 0 {
		s.checkWaiters()
	}
}

func (s *Sim) release(j int32) {
	sp := s.spec(j)
	d := &s.dyns[j]
	// usage up to now (the rest was accrued at recalcs)
	s.accrue(j, d)
	for _, n := range s.allocPool[d.allocOff : d.allocOff+sp.nodes] {
		s.nodeJobs[n]--
		if s.st.partExcl[sp.part] {
			s.nodeFreeG[n] = s.st.nodeGPUs[n]
			s.nodeFreeC[n] = s.st.nodeCPUs[n]
		} else {
			s.nodeFreeG[n] += sp.gpn
			s.nodeFreeC[n] += sp.cpn
		}
	}
}

func remove(xs []int32, x int32) []int32 {
	for i, v := range xs {
		if v == x {
			copy(xs[i:], xs[i+1:])
			return xs[:len(xs)-1]
		}
	}
	return xs
}

// checkWaiters releases dependency holds that are now satisfied, and cancels
// jobs whose afterok dependency failed (Slurm: DependencyNeverSatisfied with
// kill_invalid_depend).
func (s *Sim) checkWaiters() {
	out := s.waiters[:0]
	for _, j := range s.waiters {
		d := &s.dyns[j]
		if d.state != stPending {
			continue
		}
		ok, never := s.depsMet(j)
		switch {
		case never:
			d.state = stCancelled
			d.end = s.now
			d.held = false
			s.removePending(j)
		case ok:
			d.held = false
			d.elig = s.now
			s.startAccrual(j)
			s.dirtyMain, s.dirtyBF = true, true
		default:
			out = append(out, j)
		}
	}
	s.waiters = out
}

func (s *Sim) depsMet(j int32) (ok, neverOK bool) {
	if s.dyns[j].begin > s.now {
		return false, false // not eligible before its begin time
	}
	sp := s.spec(j)
	for _, dp := range sp.deps {
		t := &s.dyns[dp.job]
		switch t.state {
		case stFuture, stPending, stRunning:
			return false, false
		}
		if dp.kind == depAfterOK && t.state != stCompleted {
			return false, true
		}
	}
	if sp.singleton {
		for _, lst := range [][]int32{s.running, s.pending} {
			for _, o := range lst {
				if o != j && o < j && s.spec(o).user == sp.user && s.spec(o).name == sp.name {
					return false, false
				}
			}
		}
	}
	return true, false
}

// deferTo makes pending job j, held in s.waiters, eligible no earlier than
// begin (a Unix time; nothing when it is not after now): an event then
// checks its hold again (atBegin).
func (s *Sim) deferTo(j int32, begin int64) {
	if begin > s.now {
		s.events.push(event{t: begin, job: j, gen: s.dyns[j].gen})
	}
}

// atBegin releases pending job j whose begin time came, unless a
// dependency still holds it. Slurm has no event for a begin time: the job
// is seen by the next backfill pass (bf_interval) or main pass, so only
// those are flagged here, not an event-triggered main pass.
func (s *Sim) atBegin(j int32) {
	d := &s.dyns[j]
	if !d.held {
		return
	}
	main := s.dirtyMain
	s.checkWaiters()
	if !d.held && s.st.cfg.Backfill {
		s.dirtyMain = main // the backfill pass (dirtyBF, set) starts it
	}
}

// accrue adds the usage of running job j since the last accounting instant.
func (s *Sim) accrue(j int32, d *dyn) {
	sp := s.spec(j)
	from := max(d.start, s.usageLast)
	if s.now <= from {
		return
	}
	w := float64(sp.gpn * sp.nodes)
	if w == 0 {
		w = float64(sp.nodes)
	}
	s.usage[sp.assoc] += w * float64(s.now-from)
	if int(sp.assoc) < len(s.fsAt) {
		s.fsAt[sp.assoc] = 0 // its fair-share factor changed
	}
}

// recalc decays usage, accrues running usage and recomputes priorities,
// flagging passes when the order changed.
func (s *Sim) recalc() {
	cfg := &s.st.cfg
	if cfg.PriorityWeightFairshare != 0 && !s.st.basic && s.now > s.usageLast {
		for _, j := range s.running {
			s.accrue(j, &s.dyns[j])
		}
		total := 0.0
		if hl := cfg.PriorityDecayHalfLife; hl > 0 {
			// decay and sum in one sweep (the same products and the same
			// sum, in the same order, as two loops)
			// recalcs come every PriorityCalcPeriod: the factor for that
			// step is computed once
			dt := s.now - s.usageLast
			if dt != s.decayDT {
				s.decayDT, s.decayF = dt, math.Exp2(-float64(dt)/hl.Seconds())
			}
			f := s.decayF
			for i, u := range s.usage {
				u *= f
				s.usage[i] = u
				total += u
			}
		} else {
			for _, u := range s.usage {
				total += u
			}
		}
		s.usageLast = s.now
		s.usageTotal = total
		s.fsEpoch++ // every association's fair-share factor changed
	}
	if len(s.pending) == 0 {
		return
	}
	changed := false
	var prev float64 = math.Inf(1)
	prevPreemptible := false // the queue holds the jobs that can preempt first (pendingOrder)
	for _, j := range s.pending {
		p := s.priority(j)
		s.dyns[j].prio = p
		s.sortedLen = 0
		if s.st.preempting {
			if q := s.st.qosPreempt[s.spec(j).qos]; q != prevPreemptible {
				changed = changed || prevPreemptible // a preemptor behind a preemptible job
				prev, prevPreemptible = math.Inf(1), q
			}
		}
		if p > prev {
			changed = true
		}
		prev = p
	}
	if changed {
		s.dirtyMain, s.dirtyBF = true, true
	}
}

// basicTop is the priority/basic priority of the first job submitted.
const basicTop = 0xffff0000

// priority is pending job j's priority at now. Under priority/basic it
// falls by one per submission (slurmctld gives each job the previous
// one's priority − 1): first come, first served. Under
// priority/multifactor it is the weighted factors summed in a fixed order
// (a factor of weight 0 is left out: adding it would add 0).
func (s *Sim) priority(j int32) float64 {
	if s.st.basic {
		return basicTop - float64(s.dyns[j].seq)
	}
	cfg := &s.st.cfg
	sp := s.spec(j)
	p := 0.0
	if cfg.PriorityWeightAge != 0 {
		if from, ok := s.ageFrom(j); ok {
			age := float64(s.now-from) / s.st.maxAge
			p += cfg.PriorityWeightAge * min(max(age, 0), 1)
		}
	}
	p += sp.sizeTerm // PriorityWeightJobSize times the size factor (makeSpec)
	if cfg.PriorityWeightFairshare != 0 {
		p += cfg.PriorityWeightFairshare * s.fairshare(sp.assoc)
	}
	if cfg.PriorityWeightRecorded != 0 {
		p += cfg.PriorityWeightRecorded * sp.recPrio
	}
	if cfg.PriorityWeightPartition != 0 {
		p += cfg.PriorityWeightPartition * s.st.partFactor[sp.part]
	}
	if cfg.PriorityWeightQOS != 0 {
		p += cfg.PriorityWeightQOS * s.st.qosFactor[sp.qos]
	}
	return p
}

// ageFrom is when pending job j's age began to accrue (false: it accrues
// none). Age accrues from eligibility: not while a dependency or a begin
// time holds the job, nor while its user is at MaxJobsAccrue
// (acct_policy.c; priority_multifactor.c: priority_age = (now −
// accrue_time) / PriorityMaxAge) — with PriorityFlags=ACCRUE_ALWAYS, from
// its submission regardless.
func (s *Sim) ageFrom(j int32) (int64, bool) {
	if s.st.cfg.PriorityAccrueAlways {
		return s.spec(j).submit, true
	}
	d := &s.dyns[j]
	if d.held || d.accrue < 0 {
		return 0, false
	}
	return d.accrue, true
}

// startAccrual is called as pending job j becomes eligible (submitted
// without a hold, released, requeued): its age accrues from now, unless
// its user has MaxJobsAccrue jobs accruing already; it then waits for one
// of them to leave the queue (stopAccrual).
func (s *Sim) startAccrual(j int32) {
	d := &s.dyns[j]
	d.accrue = -1
	limit := s.st.maxAccrue
	if limit == 0 {
		d.accrue = s.now
		return
	}
	u := s.spec(j).user
	if n := int(u) + 1; len(s.accruing) < n {
		s.accruing = append(s.accruing, make([]int32, n-len(s.accruing))...)
	}
	if s.accruing[u] < limit {
		s.accruing[u]++
		d.accrue = s.now
	}
}

// stopAccrual is called as pending job j leaves the queue (starts, is
// cancelled). Under MaxJobsAccrue its place goes to its user's oldest
// (first submitted) eligible job that waits for one, which accrues from
// now: slurmctld hands the places out in its job list's order, and a job
// gets none back for the time it waited without one.
func (s *Sim) stopAccrual(j int32) {
	d := &s.dyns[j]
	if s.st.maxAccrue == 0 || d.accrue < 0 {
		return
	}
	d.accrue = -1
	u := s.spec(j).user
	s.accruing[u]--
	next := int32(-1)
	for _, k := range s.pending { // during a pass a job may be listed twice: harmless
		dk := &s.dyns[k]
		if k == j || dk.state != stPending || dk.held || dk.accrue >= 0 || s.spec(k).user != u {
			continue
		}
		if next < 0 || dk.seq < s.dyns[next].seq {
			next = k
		}
	}
	if next >= 0 {
		s.dyns[next].accrue = s.now
		s.accruing[u]++
	}
}

// fairshare is the classic Slurm factor 2^(−U/S): U the association's share
// of all decayed usage, S its normalised shares (equal shares per account,
// then per user within the account).
func (s *Sim) fairshare(a int32) float64 {
	if s.usageTotal <= 0 {
		return 1
	}
	// the factor is a pure function of the association's usage, the total
	// and the share counts, and jobs of one association pending together ask
	// for it again and again: it is kept until one of those changes (accrue
	// forgets one association's, recalc and intern everyone's)
	if int(a) < len(s.fsAt) && s.fsAt[a] == s.fsEpoch {
		return s.fsVal[a]
	}
	accts, users := len(s.acctNames), s.acctUsers[s.assocAcct[a]]
	share := 1 / float64(accts) / float64(users)
	f := math.Exp2(-(s.usage[a] / s.usageTotal) / share)
	if n := len(s.usage); len(s.fsAt) < n {
		s.fsAt = append(s.fsAt, make([]uint64, n-len(s.fsAt))...)
		s.fsVal = append(s.fsVal, make([]float64, n-len(s.fsVal))...)
	}
	s.fsAt[a], s.fsVal[a] = s.fsEpoch, f
	return f
}

// sortPending orders pending jobs by priority, then index (a total order:
// the sorted list is unique, however it is reached). A few jobs appended
// since the last sort are inserted into the sorted prefix one by one.
func (s *Sim) sortPending() {
	k := s.sortedLen
	if tail := len(s.pending) - k; tail == 0 {
		return
	} else if k == 0 || tail > 8 {
		slices.SortFunc(s.pending, s.pendingOrder)
	} else {
		for i := k; i < len(s.pending); i++ {
			x := s.pending[i]
			at, _ := slices.BinarySearchFunc(s.pending[:i], x, s.pendingOrder)
			copy(s.pending[at+1:i+1], s.pending[at:i])
			s.pending[at] = x
		}
	}
	s.sortedLen = len(s.pending)
}

// pendingOrder compares pending jobs a and b: with preemption, a job that
// can preempt (of a QOS that is not preemptible) before one it could
// preempt, as slurmctld sorts its queue (_sort_job_queue:
// preempt_g_job_preempt_check first; "Jobs that can preempt" come first in
// the evaluation order of priority_multifactor.html); then the higher
// priority first, then the earlier submission (sort_job_queue2: equal
// priorities by increasing job id, which slurmctld hands out in
// submission order; a job submitted through the seam ranks among the
// trace's jobs by when it was submitted, not after all of them).
func (s *Sim) pendingOrder(a, b int32) int {
	if st := s.st; st.preempting {
		if qa, qb := st.qosPreempt[s.spec(a).qos], st.qosPreempt[s.spec(b).qos]; qa != qb {
			if qb {
				return -1
			}
			return 1
		}
	}
	pa, pb := s.dyns[a].prio, s.dyns[b].prio
	if pa != pb {
		if pa > pb {
			return -1
		}
		return 1
	}
	return cmp.Compare(s.dyns[a].seq, s.dyns[b].seq)
}

// removePending removes job j from s.pending, keeping the order (as remove
// does).
func (s *Sim) removePending(j int32) {
	if i := slices.Index(s.pending, j); i >= 0 {
		s.pending = remove(s.pending, j)
		if i < s.sortedLen {
			s.sortedLen--
		}
	}
}

// tryAlloc finds nodes for j now and, when found, starts it.
func (s *Sim) tryAlloc(j int32) bool {
	sp := s.spec(j)
	st := s.st
	excl := st.partExcl[sp.part]
	need := int(sp.nodes)
	pick := s.scratch[:0]
	for _, n := range st.partNodes[sp.part] {
		if sp.allowed != nil && !sp.allowed[n] || s.passHeld != nil && s.passHeld[n] {
			continue
		}
		if excl {
			if s.nodeJobs[n] != 0 {
				continue
			}
			if sp.gpn > st.nodeGPUs[n] {
				continue
			}
		} else if s.nodeFreeG[n] < sp.gpn || s.nodeFreeC[n] < sp.cpn {
			continue
		}
		pick = append(pick, n)
		if len(pick) == need {
			break
		}
	}
	s.scratch = pick
	if len(pick) < need {
		return false
	}
	d := &s.dyns[j]
	d.allocOff = int32(len(s.allocPool))
	s.allocPool = append(s.allocPool, pick...)
	for _, n := range pick {
		s.nodeJobs[n]++
		if excl {
			s.nodeFreeG[n], s.nodeFreeC[n] = 0, 0
		} else {
			s.nodeFreeG[n] -= sp.gpn
			s.nodeFreeC[n] -= sp.cpn
		}
	}
	s.stopAccrual(j)
	d.state = stRunning
	d.start = s.now
	d.early = 0
	d.gen++
	defer s.notifyStart(j)
	s.startLog = append(s.startLog, startEntry{t: s.now, j: j})
	rt := min(sp.runtime, sp.limit)
	s.events.push(event{t: s.now + rt, job: j, gen: d.gen})
	s.running = append(s.running, j)
	s.addByEnd(j)
	s.dirtyBF = true
	return true
}

// mainPass is Slurm's main scheduler: pending jobs in priority order, each
// started if resources allow; the first that cannot start blocks the rest of
// its partition, except a job whose node list (--nodelist) names its nodes:
// it keeps lower-priority jobs off those nodes only, for the rest of the
// pass (slurmctld's _schedule: "Do not schedule more jobs on nodes required
// by this job, but don't block the entire queue/partition"). A job of a
// non-preemptible QOS may preempt running jobs of a preemptible QOS.
func (s *Sim) mainPass() {
	s.dirtyMain = false
	s.mainAt = never
	if len(s.pending) == 0 {
		return
	}
	s.sortPending()
	var blocked uint64
	var blockedMap map[int16]bool
	isBlocked := func(p int16) bool {
		if p < 64 {
			return blocked&(1<<p) != 0
		}
		return blockedMap[p]
	}
	out := s.pending[:0]
	for i, j := range s.pending {
		d := &s.dyns[j]
		if d.state != stPending {
			continue
		}
		sp := s.spec(j)
		if d.held || isBlocked(sp.part) {
			out = append(out, j)
			continue
		}
		if s.tryAlloc(j) || s.tryPreempt(j) {
			continue
		}
		if s.st.minAgeRes > 0 && s.now-d.elig < s.st.minAgeRes {
			out = append(out, j) // too young to keep anyone off anything (bf_min_age_reserve)
			continue
		}
		if sp.required {
			if s.passHeld == nil {
				s.passHeld = make([]bool, len(s.st.nodeNames))
			}
			for n, ok := range sp.allowed {
				s.passHeld[n] = s.passHeld[n] || ok
			}
			out = append(out, j)
			continue
		}
		for _, p := range s.st.partOverlap[sp.part] {
			if p < 64 {
				blocked |= 1 << p
			} else {
				if blockedMap == nil {
					blockedMap = map[int16]bool{}
				}
				blockedMap[p] = true
			}
		}
		_ = i
		out = append(out, j)
	}
	s.passHeld = nil
	s.sortedLen = len(out) // sorted above, and still in order
	s.pending = append(out, s.requeued...)
	s.requeued = s.requeued[:0]
}

// tryPreempt frees nodes held by preemptible jobs for j, lowest priority
// (latest start) first, and starts j when enough were freed.
func (s *Sim) tryPreempt(j int32) bool {
	sp := s.spec(j)
	st := s.st
	if st.qosPreempt[sp.qos] || !slices.Contains(st.qosPreempt, true) {
		return false // preemptible itself, or nothing is
	}
	var cand []int32
	for _, r := range s.running {
		rs := s.spec(r)
		if st.qosPreempt[rs.qos] && st.partOverlap[sp.part] != nil {
			for _, n := range s.allocPool[s.dyns[r].allocOff : s.dyns[r].allocOff+rs.nodes] {
				if st.partMember[sp.part][n] {
					cand = append(cand, r)
					break
				}
			}
		}
	}
	if len(cand) == 0 {
		return false
	}
	slices.SortFunc(cand, func(a, b int32) int {
		if s.dyns[a].start != s.dyns[b].start {
			return int(s.dyns[b].start - s.dyns[a].start)
		}
		return int(b - a)
	})
	// would freeing all candidates be enough? check on a copy of node state
	saveG, saveC, saveJ := slices.Clone(s.nodeFreeG), slices.Clone(s.nodeFreeC), slices.Clone(s.nodeJobs)
	k := 0
	for ; k < len(cand); k++ {
		s.releaseNodesOnly(cand[k])
		if s.fits(j) {
			break
		}
	}
	copy(s.nodeFreeG, saveG)
	copy(s.nodeFreeC, saveC)
	copy(s.nodeJobs, saveJ)
	if k == len(cand) {
		return false
	}
	for _, r := range cand[:k+1] {
		s.preempt(r)
	}
	return s.tryAlloc(j)
}

func (s *Sim) releaseNodesOnly(r int32) {
	sp := s.spec(r)
	for _, n := range s.allocPool[s.dyns[r].allocOff : s.dyns[r].allocOff+sp.nodes] {
		s.nodeJobs[n]--
		if s.st.partExcl[sp.part] {
			s.nodeFreeG[n], s.nodeFreeC[n] = s.st.nodeGPUs[n], s.st.nodeCPUs[n]
		} else {
			s.nodeFreeG[n] += sp.gpn
			s.nodeFreeC[n] += sp.cpn
		}
	}
}

func (s *Sim) fits(j int32) bool {
	sp := s.spec(j)
	excl := s.st.partExcl[sp.part]
	c := 0
	for _, n := range s.st.partNodes[sp.part] {
		if sp.allowed != nil && !sp.allowed[n] {
			continue
		}
		if excl && s.nodeJobs[n] == 0 && sp.gpn <= s.st.nodeGPUs[n] || !excl && s.nodeFreeG[n] >= sp.gpn && s.nodeFreeC[n] >= sp.cpn {
			c++
			if c == int(sp.nodes) {
				return true
			}
		}
	}
	return false
}

// preempt stops running job r: requeued (pending again, runs from scratch)
// or cancelled, per its QOS PreemptMode.
func (s *Sim) preempt(r int32) {
	d := &s.dyns[r]
	s.release(r)
	s.running = remove(s.running, r)
	s.removeByEnd(r)
	d.gen++ // its end event is now stale
	if s.st.qosRequeue[s.spec(r).qos] {
		d.state = stPending
		d.start, d.end = -1, -1
		d.elig = s.now
		s.startAccrual(r) // a requeue restarts its age (acct_policy: accrue_time = 0)
		d.requeues++
		d.prio = s.priority(r)
		s.requeued = append(s.requeued, r)
	} else {
		d.state = stPreempted
		d.end = s.now
	}
	s.dirtyMain, s.dirtyBF = true, true
}

// Fork returns an independent copy of the simulator at its current instant.
// Job specs and configuration are shared (immutable); everything that
// changes is copied. Callbacks are kept; replace them with OnTick.
func (s *Sim) Fork() *Sim {
	c := *s
	c.extra = slices.Clone(s.extra)
	s.users = s.users[:len(s.users):len(s.users)]
	c.users = s.users
	s.assocs = s.assocs[:len(s.assocs):len(s.assocs)]
	c.assocs = s.assocs
	s.assocAcct = s.assocAcct[:len(s.assocAcct):len(s.assocAcct)]
	c.assocAcct = s.assocAcct
	s.acctNames = s.acctNames[:len(s.acctNames):len(s.acctNames)]
	c.acctNames = s.acctNames
	c.extraIDs = maps.Clone(s.extraIDs)
	s.startLog = s.startLog[:len(s.startLog):len(s.startLog)]
	c.startLog = s.startLog
	s.namesOwned, c.namesOwned = false, false
	c.dyns = slices.Clone(s.dyns)
	c.events = slices.Clone(s.events)
	c.pending = slices.Clone(s.pending)
	c.running = slices.Clone(s.running)
	c.byEnd = slices.Clone(s.byEnd)
	c.waiters = slices.Clone(s.waiters)
	c.requeued = nil
	c.latent = slices.Clone(s.latent)
	c.allocPool = slices.Clone(s.allocPool)
	c.nodeFreeG = slices.Clone(s.nodeFreeG)
	c.nodeFreeC = slices.Clone(s.nodeFreeC)
	c.nodeJobs = slices.Clone(s.nodeJobs)
	c.usage = slices.Clone(s.usage)
	c.accruing = slices.Clone(s.accruing)
	c.acctUsers = slices.Clone(s.acctUsers)
	c.prof = profile{}
	c.scratch = nil
	c.fsAt, c.fsVal = nil, nil
	return &c
}

// Result is one job's simulated outcome.
type Result struct {
	ID       string               // job id
	Submit   time.Time            // submission
	Start    time.Time            // simulated start (zero if it never started)
	End      time.Time            // simulated end (zero if not ended)
	State    provisioner.JobState // final or current state
	Nodes    int                  // nodes
	Limit    time.Duration        // time limit used
	Requeues int                  // times requeued by preemption
}

// Results returns every job's outcome in load/submit order.
func (s *Sim) Results() []Result {
	out := make([]Result, s.numJobs())
	for i := range out {
		out[i] = s.result(int32(i))
	}
	return out
}

// Result returns one job's outcome.
func (s *Sim) Result(id string) (Result, error) {
	j, ok := s.lookup(id)
	if !ok {
		return Result{}, fmt.Errorf("%w: %s", ErrUnknownJob, id)
	}
	return s.result(j), nil
}

func (s *Sim) result(j int32) Result {
	sp, d := s.spec(j), &s.dyns[j]
	r := Result{ID: sp.id, Submit: time.Unix(sp.submit, 0).UTC(), State: stateNames[d.state], Nodes: int(sp.nodes), Limit: time.Duration(sp.limit) * time.Second, Requeues: int(d.requeues)}
	if d.start >= 0 {
		r.Start = time.Unix(d.start, 0).UTC()
	}
	if d.end >= 0 && d.state > stRunning {
		r.End = time.Unix(d.end, 0).UTC()
	}
	return r
}
