package provisioner_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/mirage-gpu/mirage/provisioner"
)

// TestStepScripts runs the stories in testdata/step: the pure decision step
// (provisioner.Step) and the Engine that applies it, told as scripts of
// commands with the expected output below each one (etcd raft style, run by
// cockroachdb/datadriven). `go test -run TestStepScripts -rewrite` rewrites
// the expected outputs from what the code prints; review the diff.
//
// Every story happens on 2026-11-23 (UTC); times are written HH:MM or
// HH:MM:SS of that day. Commands:
//
//	reset                      forget everything: empty store, empty cluster, no rules
//	chain policy=P segments=N retries=R [id=c1] [account=A] [args=X] [signal=D] [keeper=K] [cluster=C]
//	  I.A job=J STATE [submit=T] [start=T] [end=T] [exit=N] [done] [note=free text to the end of the line]
//	                           store a chain (name train, script /home/u/train.sbatch,
//	                           partition gpu, limit 1h, 1 node, 4 GPUs,
//	                           created 08:00; signal: its --signal lead) and, one per
//	                           input line, its stored segments (done: its job ran
//	                           mirage done)
//	live
//	  ID [tag=C/I.A [db=K]] [STATE] [submit=T] [start=T] [end=T] [exit=N] [est=T] [nodes=N] [gpus=N] [partition=P]
//	                           the jobs the backend reports live (default PENDING, 1 node, limit 1h)
//	history
//	  (job lines as for live)  the backend's history, complete (HistoryOK); without
//	                           this command the backend has no accounting
//	reclaimed
//	  JOB ...                  jobs the backend saw mirage reclaim (Snapshot.Reclaimed)
//	backend queues|kubernetes  what the backend's snapshots say it does by itself
//	                           (default queues: it queues and unpins, as Slurm;
//	                           kubernetes: neither)
//	rules deny|borrow|panic|none
//	                           a fake provisioner.Rules; the input is its reason
//	                           (borrow admits on borrowed quota with QOS "borrow";
//	                           panic: the input is the chain whose requests make it
//	                           panic, the others it admits)
//	rules reclaim=J1,J2 node=N
//	                           the fake admits every submission after a reclaim
//	                           of jobs J1, J2 on node N (signal USR1, grace 30s)
//	fail evict=J               the eviction of job J fails
//	fail submit=rejected|unavailable|not-submitted
//	fail snapshot=unavailable  queue one failing Submit call / make Snapshot fail
//	step now=T [reasons] [request] [keeper=K] [cluster=C]
//	                           run Step on the stored chains, the live jobs and the
//	                           history; print its halt, if any, and its plan, one op per line (with
//	                           reasons: the decision reasons and notes; with
//	                           request: each submission's request; keeper and
//	                           cluster: the deciding database's and the backend's, as
//	                           StepInput.Keeper and Cluster; db= in a job line: its
//	                           comment's specification names that keeper)
//	cycle now=T [crash=POINT]  run one Engine cycle (memory store, the scripted
//	                           backend) at T, optionally crashing at a fault point;
//	                           print the backend calls, the report and the
//	                           cycle's error with the sentinels it wraps
//	store                      print the stored chains, segments, decisions and events
func TestStepScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/step", func(t *testing.T, path string) {
		d := newStepDriver()
		datadriven.RunTest(t, path, d.run)
	})
}

// day is the date of every story.
var day = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

type stepDriver struct {
	store   *provisioner.MemStore
	cluster *scriptCluster
	rules   provisioner.Rules
}

func newStepDriver() *stepDriver {
	return &stepDriver{store: provisioner.NewMemStore(), cluster: &scriptCluster{caps: provisioner.Capabilities{Queues: true, Unpins: true}}}
}

func (d *stepDriver) run(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	switch td.Cmd {
	case "reset":
		*d = *newStepDriver()
		return ""
	case "chain":
		return d.chain(t, td)
	case "live":
		d.cluster.jobs = parseJobs(t, td.Input)
		return ""
	case "history":
		d.cluster.history, d.cluster.historyOK = parseJobs(t, td.Input), true
		return ""
	case "reclaimed":
		d.cluster.reclaimed = nil
		for _, id := range strings.Fields(td.Input) {
			d.cluster.reclaimed = append(d.cluster.reclaimed, provisioner.Reclaimed{JobID: id, Team: "t"})
		}
		return ""
	case "backend":
		switch mode := onlyKey(t, td); mode {
		case "queues":
			d.cluster.caps = provisioner.Capabilities{Queues: true, Unpins: true}
		case "kubernetes":
			d.cluster.caps = provisioner.Capabilities{}
		default:
			t.Fatalf("%s: backend %q: want queues or kubernetes", td.Pos, mode)
		}
		return ""
	case "rules":
		d.rules = nil
		if v, ok := arg(td, "reclaim"); ok {
			node, _ := arg(td, "node")
			r := &provisioner.Reclaim{Team: "b", Node: node, Signal: "USR1", Grace: 30 * time.Second, Reason: "reclaim " + v + " on " + node}
			for _, id := range strings.Split(v, ",") {
				r.Victims = append(r.Victims, provisioner.Victim{JobID: id, Team: "a", Node: node, Reason: "borrowed"})
			}
			d.rules = fakeRules{allow: true, reclaim: r, reason: td.Input}
			return ""
		}
		switch mode := onlyKey(t, td); mode {
		case "deny":
			d.rules = fakeRules{reason: td.Input}
		case "borrow":
			d.rules = fakeRules{allow: true, borrow: true, reason: td.Input}
		case "panic":
			d.rules = fakeRules{panicFor: td.Input}
		case "none":
		default:
			t.Fatalf("%s: rules %q: want deny, borrow, panic or none", td.Pos, mode)
		}
		return ""
	case "fail":
		if v, ok := arg(td, "submit"); ok {
			d.cluster.submitErr = append(d.cluster.submitErr, submitError(t, v))
		}
		if v, ok := arg(td, "evict"); ok {
			d.cluster.evictErr = v
		}
		if v, ok := arg(td, "snapshot"); ok {
			if v != "unavailable" {
				t.Fatalf("%s: fail snapshot=%s: only unavailable", td.Pos, v)
			}
			d.cluster.snapErr = fmt.Errorf("squeue: %w", provisioner.ErrUnavailable)
		}
		return ""
	case "step":
		return d.step(t, td)
	case "cycle":
		return d.cycle(t, td)
	case "store":
		return d.dump(t, ctx)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

// chain stores a chain and its segments.
func (d *stepDriver) chain(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	c := provisioner.Chain{ID: "c1", Name: "train", Script: "/home/u/train.sbatch", Partition: "gpu", TimeLimit: time.Hour,
		Nodes: 1, GPUs: 4, State: provisioner.ChainActive, Created: at(t, "08:00")}
	for _, a := range td.CmdArgs {
		v := a.SingleVal(t)
		switch a.Key {
		case "id":
			c.ID = v
		case "policy":
			c.Policy = v
		case "segments":
			c.Segments = atoi(t, v)
		case "retries":
			c.MaxRetries = atoi(t, v)
		case "account":
			c.Account = v
		case "args":
			c.Args = append(c.Args, v)
		case "keeper":
			c.Keeper = v
		case "cluster":
			c.Cluster = v
		case "signal":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: chain: signal=%s: %v", td.Pos, v, err)
			}
			c.SignalLead = d
		default:
			t.Fatalf("%s: chain: unknown argument %q", td.Pos, a.Key)
		}
	}
	if err := d.store.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	for _, line := range lines(td.Input) {
		s := parseSegment(t, c.ID, line)
		if err := d.store.PutSegment(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	return ""
}

// step runs the pure step on the stored state and prints its plan.
func (d *stepDriver) step(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	now := at(t, mustArg(t, td, "now"))
	chains, err := d.store.Chains(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var records []provisioner.ChainRecord
	for _, c := range chains {
		segs, err := d.store.Segments(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, provisioner.ChainRecord{Chain: c, Segments: segs})
	}
	in := &provisioner.StepInput{Now: now, Snapshot: &provisioner.Snapshot{Time: now, Jobs: slices.Clone(d.cluster.jobs), Caps: d.cluster.caps, Reclaimed: slices.Clone(d.cluster.reclaimed)},
		History: slices.Clone(d.cluster.history), HistoryOK: d.cluster.historyOK, Chains: records, Rules: d.rules}
	in.Keeper, _ = arg(td, "keeper")
	in.Cluster, _ = arg(td, "cluster")
	plan := provisioner.Step(in)
	var b strings.Builder
	if plan.Halt != "" {
		fmt.Fprintf(&b, "halt: %s\n", plan.Halt)
	}
	reasons, request := td.HasArg("reasons"), td.HasArg("request")
	for _, op := range plan.Ops {
		writeOp(&b, &op, reasons, request)
	}
	return b.String()
}

func writeOp(b *strings.Builder, op *provisioner.Op, reasons, request bool) {
	why := func(r *provisioner.DecisionRecord) {
		if reasons && r.Reason != "" {
			fmt.Fprintf(b, "  why: %s\n", r.Reason)
		}
	}
	switch op.Kind {
	case provisioner.OpPutSegment:
		fmt.Fprintf(b, "put %s\n", segment(op.Segment, reasons))
	case provisioner.OpPutChain:
		fmt.Fprintf(b, "chain %s: %s\n", op.Chain.State, op.Chain.Reason)
	case provisioner.OpRecord:
		r := op.Record
		fmt.Fprintf(b, "record %s %s%s\n", index(r.Segment), r.Action, jobAndError(r))
		why(r)
	case provisioner.OpEvent:
		e := op.Event
		fmt.Fprintf(b, "event %s %s", e.Kind, eventSegment(e))
		if e.Kind == provisioner.EventGap {
			fmt.Fprintf(b, " %+.0fs", e.Value)
		}
		b.WriteByte('\n')
	case provisioner.OpCancel:
		fmt.Fprintf(b, "cancel %d.%d job=%s\n", op.Segment.Index, op.Segment.Attempt, op.Segment.JobID)
		why(op.Record)
	case provisioner.OpCancelDup:
		fmt.Fprintf(b, "cancel-dup %d job=%s\n", op.Record.Segment, op.Record.JobID)
		why(op.Record)
	case provisioner.OpSubmit:
		r := op.Request
		fmt.Fprintf(b, "submit %d.%d prev=%s", op.Segment.Index, op.Segment.Attempt, r.Env[provisioner.EnvPrevJob])
		if len(r.Dependency) > 0 {
			fmt.Fprintf(b, " dep=%s", r.Dependency)
		}
		if r.QOS != "" {
			fmt.Fprintf(b, " qos=%s", r.QOS)
		}
		if len(r.NodeList) > 0 {
			fmt.Fprintf(b, " nodes=%s", strings.Join(r.NodeList, ","))
		}
		fmt.Fprintf(b, " action=%s\n", op.Record.Action)
		why(op.Record)
		if request {
			writeRequest(b, r)
		}
	case provisioner.OpReclaim:
		var ids []string
		for _, v := range op.Reclaim.Victims {
			ids = append(ids, v.JobID)
		}
		fmt.Fprintf(b, "reclaim %d victims=%s node=%s signal=%s grace=%s\n", op.Record.Segment, strings.Join(ids, ","), op.Reclaim.Node, op.Reclaim.Signal, op.Reclaim.Grace)
		why(op.Record)
	default:
		fmt.Fprintf(b, "op %s\n", op.Kind)
	}
}

// writeRequest prints a submission request, the tag in its comment, its
// environment and the chain specification read back from the comment.
func writeRequest(b *strings.Builder, r *provisioner.SubmitRequest) {
	fmt.Fprintf(b, "  request name=%s script=%s args=%s account=%s partition=%s limit=%s nodes=%d gpus=%d\n",
		r.Name, r.Script, strings.Join(r.Args, ","), r.Account, r.Partition, r.TimeLimit, r.Nodes, r.GPUs)
	if tag, ok := provisioner.ParseTag(r.Comment); ok {
		fmt.Fprintf(b, "  tag %s/%d.%d\n", tag.Chain, tag.Segment, tag.Attempt)
	} else {
		fmt.Fprintf(b, "  tag none in %q\n", r.Comment)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Env)) {
		fmt.Fprintf(b, "  env %s=%s\n", k, r.Env[k])
	}
	c, ok := provisioner.ParseChainSpec(r.Comment)
	if !ok {
		fmt.Fprintf(b, "  spec unreadable\n")
		return
	}
	n, carried := provisioner.SpecOptions(r.Comment)
	fmt.Fprintf(b, "  spec id=%s name=%s script=%s args=%s options=%d carried=%v policy=%s segments=%d retries=%d account=%s partition=%s limit=%s nodes=%d gpus=%d state=%s created=%s\n",
		c.ID, c.Name, c.Script, strings.Join(c.Args, ","), n, carried, c.Policy, c.Segments, c.MaxRetries, c.Account, c.Partition, c.TimeLimit,
		c.Nodes, c.GPUs, c.State, clock(c.Created))
}

// cycle runs one Engine cycle against the store and the scripted backend.
func (d *stepDriver) cycle(t *testing.T, td *datadriven.TestData) (out string) {
	now := at(t, mustArg(t, td, "now"))
	d.cluster.now, d.cluster.calls = now, nil
	e := &provisioner.Engine{Cluster: d.cluster, Store: d.store, Clock: fixedClock{now}, Rules: d.rules, Log: slog.New(slog.DiscardHandler)}
	crashAt, crash := arg(td, "crash")
	type crashed struct{}
	if crash {
		e.Fault = func(point string) {
			if point == crashAt {
				panic(crashed{})
			}
		}
	}
	var b strings.Builder
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
			d.writeCalls(&b)
			fmt.Fprintf(&b, "crashed at %s\n", crashAt)
			out = b.String()
		}
	}()
	rep, err := e.Cycle(context.Background())
	d.writeCalls(&b)
	fmt.Fprintf(&b, "report chains=%d adopted=%d updated=%d ended=%d waits=%d errors=%d cancelled=%d submitted=%d rejected=%d history=%t\n",
		rep.Chains, rep.Adopted, rep.Updated, rep.Ended, rep.Waits, rep.Errors, rep.Cancelled, rep.Submitted(), rep.Rejected(), rep.HistoryOK)
	for _, s := range rep.Submissions {
		fmt.Fprintf(&b, "submission %s %d.%d", s.ChainID, s.Segment, s.Attempt)
		if s.JobID != "" {
			fmt.Fprintf(&b, " job=%s", s.JobID)
		}
		if s.Err != nil {
			fmt.Fprintf(&b, " err=%v", s.Err)
		}
		b.WriteByte('\n')
	}
	if err != nil {
		fmt.Fprintf(&b, "error%s: %v\n", sentinels(err), err)
	}
	return b.String()
}

// sentinels names the backend sentinel errors err wraps, as " [name...]".
func sentinels(err error) string {
	var names []string
	for _, s := range []struct {
		name string
		err  error
	}{{"rejected", provisioner.ErrRejected}, {"unavailable", provisioner.ErrUnavailable}, {"not-submitted", provisioner.ErrNotSubmitted}, {"implausible", provisioner.ErrImplausibleView}} {
		if errors.Is(err, s.err) {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " [" + strings.Join(names, " ") + "]"
}

func (d *stepDriver) writeCalls(b *strings.Builder) {
	calls := d.cluster.calls
	// Evictions run at once: a run of them is printed in job order.
	for i := 0; i < len(calls); {
		j := i + 1
		if strings.HasPrefix(calls[i], "evict ") {
			for j < len(calls) && strings.HasPrefix(calls[j], "evict ") {
				j++
			}
			slices.Sort(calls[i:j])
		}
		for _, c := range calls[i:j] {
			fmt.Fprintf(b, "backend %s\n", c)
		}
		i = j
	}
}

// dump prints the store: each chain with its segments, decisions and
// events, then the cluster-wide events.
func (d *stepDriver) dump(t *testing.T, ctx context.Context) string {
	var b strings.Builder
	chains, err := d.store.Chains(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chains {
		fmt.Fprintf(&b, "chain %s %s", c.ID, c.State)
		if c.Reason != "" {
			fmt.Fprintf(&b, ": %s", c.Reason)
		}
		b.WriteByte('\n')
		segs, _ := d.store.Segments(ctx, c.ID)
		for i := range segs {
			fmt.Fprintf(&b, "  segment %s\n", segment(&segs[i], true))
		}
		ds, _ := d.store.Decisions(ctx, c.ID)
		for i := range ds {
			r := &ds[i]
			fmt.Fprintf(&b, "  decision %s %s%s", index(r.Segment), r.Action, jobAndError(r))
			if r.Count > 1 {
				fmt.Fprintf(&b, " count=%d", r.Count)
			}
			b.WriteByte('\n')
		}
		evs, _ := d.store.Events(ctx, c.ID)
		for i := range evs {
			fmt.Fprintf(&b, "  event %s %s\n", evs[i].Kind, eventSegment(&evs[i]))
		}
	}
	evs, _ := d.store.Events(ctx, "")
	for _, e := range evs {
		fmt.Fprintf(&b, "cluster event %s: %s\n", e.Kind, e.Detail)
	}
	return b.String()
}

// segment renders a segment: index.attempt, job, state, times, exit code,
// the nodes it is pinned to and, with notes, its note.
func segment(s *provisioner.Segment, notes bool) string {
	out := fmt.Sprintf("%d.%d job=%s %s", s.Index, s.Attempt, s.JobID, s.State)
	for _, f := range []struct {
		k string
		t time.Time
	}{{"submit", s.Submit}, {"start", s.Start}, {"end", s.End}} {
		if !f.t.IsZero() {
			out += " " + f.k + "=" + clock(f.t)
		}
	}
	if s.ExitCode != 0 {
		out += " exit=" + strconv.Itoa(s.ExitCode)
	}
	if s.Pinned != "" {
		out += " pinned=" + s.Pinned
	}
	if s.Done {
		out += " done"
	}
	if notes && s.Note != "" {
		out += " note=" + s.Note
	}
	return out
}

func eventSegment(e *provisioner.Event) string {
	out := index(e.Segment)
	if e.Segment >= 0 {
		out += "." + strconv.Itoa(e.Attempt)
	}
	if e.JobID != "" {
		out += " job=" + e.JobID
	}
	return out
}

func jobAndError(r *provisioner.DecisionRecord) string {
	out := ""
	if r.JobID != "" {
		out += " job=" + r.JobID
	}
	if r.Error != "" {
		out += " error=" + r.Error
	}
	return out
}

// index renders a segment index; -1 (about the whole chain) as "-".
func index(i int) string {
	if i < 0 {
		return "-"
	}
	return strconv.Itoa(i)
}

// clock renders a time of the story's day as HH:MM (HH:MM:SS when it has seconds).
func clock(t time.Time) string {
	switch {
	case t.IsZero():
		return "-"
	case !t.UTC().Truncate(24 * time.Hour).Equal(day):
		return t.UTC().Format(time.RFC3339)
	case t.Second() != 0:
		return t.UTC().Format("15:04:05")
	}
	return t.UTC().Format("15:04")
}

// at parses HH:MM or HH:MM:SS on the story's day.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	for _, layout := range []string{"15:04", "15:04:05"} {
		if c, err := time.Parse(layout, s); err == nil {
			return day.Add(c.Sub(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)))
		}
	}
	t.Fatalf("bad time %q: want HH:MM or HH:MM:SS", s)
	return time.Time{}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func arg(td *datadriven.TestData, key string) (string, bool) {
	a, ok := td.Arg(key)
	if !ok || len(a.Vals) == 0 {
		return "", ok
	}
	return a.Vals[0], true
}

func mustArg(t *testing.T, td *datadriven.TestData, key string) string {
	t.Helper()
	v, ok := arg(td, key)
	if !ok {
		t.Fatalf("%s: %s needs %s=", td.Pos, td.Cmd, key)
	}
	return v
}

func onlyKey(t *testing.T, td *datadriven.TestData) string {
	t.Helper()
	if len(td.CmdArgs) != 1 {
		t.Fatalf("%s: %s takes one word", td.Pos, td.Cmd)
	}
	return td.CmdArgs[0].Key
}

// parseSegment reads "I.A job=J STATE key=value... [note=text to the end]".
func parseSegment(t *testing.T, chainID, line string) provisioner.Segment {
	t.Helper()
	s := provisioner.Segment{ChainID: chainID}
	if i := strings.Index(line, "note="); i >= 0 {
		s.Note = line[i+len("note="):]
		line = line[:i]
	}
	f := strings.Fields(line)
	idx, att, ok := strings.Cut(f[0], ".")
	if !ok {
		t.Fatalf("segment %q: want INDEX.ATTEMPT first", line)
	}
	s.Index, s.Attempt = atoi(t, idx), atoi(t, att)
	for _, w := range f[1:] {
		k, v, ok := strings.Cut(w, "=")
		switch {
		case w == "done": // its job ran mirage done
			s.Done = true
			continue
		case !ok:
			s.State = provisioner.JobState(w)
			continue
		}
		switch k {
		case "job":
			s.JobID = v
		case "submit":
			s.Submit = at(t, v)
		case "start":
			s.Start = at(t, v)
		case "end":
			s.End = at(t, v)
		case "exit":
			s.ExitCode = atoi(t, v)
		case "pinned":
			s.Pinned = v
		default:
			t.Fatalf("segment %q: unknown key %q", line, k)
		}
	}
	return s
}

// parseJobs reads one job per line: "ID [tag=C/I.A] [STATE] key=value..."
// (on=N1,N2 is the node list).
func parseJobs(t *testing.T, input string) []provisioner.Job {
	t.Helper()
	var out []provisioner.Job
	for _, line := range lines(input) {
		f := strings.Fields(line)
		j := provisioner.Job{ID: f[0], State: provisioner.StatePending, Nodes: 1, TimeLimit: time.Hour}
		for _, w := range f[1:] {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				j.State = provisioner.JobState(w)
				continue
			}
			switch k {
			case "tag":
				c, ia, _ := strings.Cut(v, "/")
				i, a, _ := strings.Cut(ia, ".")
				j.Comment = provisioner.MustTag(c, atoi(t, i), atoi(t, a))
			case "db": // after tag=: the comment's specification names keeper v
				tag, ok := provisioner.ParseTag(j.Comment)
				if !ok {
					t.Fatalf("job %q: db= needs a tag= before it", line)
				}
				j.Comment = provisioner.ChainComment(&provisioner.Chain{ID: tag.Chain, Keeper: v}, tag.Segment, tag.Attempt)
			case "submit":
				j.Submit = at(t, v)
			case "start":
				j.Start = at(t, v)
			case "end":
				j.End = at(t, v)
			case "est":
				j.EstStart = at(t, v)
			case "exit":
				j.ExitCode = atoi(t, v)
			case "nodes":
				j.Nodes = atoi(t, v)
			case "gpus":
				j.GPUs = atoi(t, v)
			case "partition":
				j.Partition = v
			case "on":
				j.NodeList = strings.Split(v, ",")
			default:
				t.Fatalf("job %q: unknown key %q", line, k)
			}
		}
		out = append(out, j)
	}
	return out
}

func submitError(t *testing.T, kind string) error {
	t.Helper()
	switch kind {
	case "rejected":
		return fmt.Errorf("sbatch: invalid partition: %w", provisioner.ErrRejected)
	case "unavailable":
		return fmt.Errorf("sbatch: %w", provisioner.ErrUnavailable)
	case "not-submitted":
		return fmt.Errorf("deferred: %w", provisioner.ErrNotSubmitted)
	}
	t.Fatalf("fail submit=%s: want rejected, unavailable or not-submitted", kind)
	return nil
}

// fakeRules is a scripted provisioner.Rules: it defers every submission,
// or admits it on borrowed quota under QOS "borrow", or after a reclaim
// (onto the reclaim's node), or panics on the requests of one chain
// (panicFor) and admits the others.
type fakeRules struct {
	allow, borrow bool
	reclaim       *provisioner.Reclaim
	reason        string
	panicFor      string
}

func (r fakeRules) Admit(now time.Time, snap *provisioner.Snapshot, req *provisioner.SubmitRequest) (provisioner.Admission, error) {
	if r.panicFor != "" {
		if tag, _ := provisioner.ParseTag(req.Comment); tag.Chain == r.panicFor {
			var idx []int
			_ = idx[3] // an index out of range, as a bad model's
		}
		return provisioner.Admission{Allow: true}, nil
	}
	if !r.allow {
		return provisioner.Admission{Reason: r.reason}, nil
	}
	if r.borrow {
		req.QOS = "borrow"
	}
	if r.reclaim != nil {
		req.NodeList = []string{r.reclaim.Node}
	}
	return provisioner.Admission{Allow: true, Borrowed: r.borrow, Reason: r.reason, Reclaim: r.reclaim}, nil
}

// scriptCluster is the scripted backend of the cycle stories: the live
// jobs, the history (when it has one), queued Submit failures. A
// successful Submit adds a PENDING job with the next id (101, 102, ...)
// to the live jobs; Cancel and Signal are only recorded.
type scriptCluster struct {
	mu        sync.Mutex // evictions run at once
	caps      provisioner.Capabilities
	reclaimed []provisioner.Reclaimed // the backend's memory of reclaims (Snapshot.Reclaimed)
	evictErr  string                  // the job whose eviction fails
	now       time.Time
	jobs      []provisioner.Job
	history   []provisioner.Job
	historyOK bool
	snapErr   error
	submitErr []error // consumed one per Submit call
	nextID    int
	calls     []string // backend calls of the current cycle
}

func (c *scriptCluster) Snapshot(ctx context.Context) (*provisioner.Snapshot, error) {
	if c.snapErr != nil {
		c.calls = append(c.calls, "snapshot failed")
		return nil, c.snapErr
	}
	return &provisioner.Snapshot{Time: c.now, Jobs: slices.Clone(c.jobs), Caps: c.caps, Reclaimed: slices.Clone(c.reclaimed)}, nil
}

// EvictBorrowed implements provisioner.Evictor: the job leaves the live
// jobs, unless it is the one whose eviction is scripted to fail.
func (c *scriptCluster) EvictBorrowed(ctx context.Context, id string, grace time.Duration, reason string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == c.evictErr {
		c.calls = append(c.calls, "evict "+id+" failed")
		return provisioner.ErrNotBorrowed
	}
	c.calls = append(c.calls, fmt.Sprintf("evict %s grace %s", id, grace))
	c.jobs = slices.DeleteFunc(c.jobs, func(j provisioner.Job) bool { return j.ID == id })
	return nil
}

func (c *scriptCluster) History(ctx context.Context, since time.Time) ([]provisioner.Job, error) {
	if !c.historyOK {
		return nil, provisioner.ErrNoAccounting
	}
	return slices.Clone(c.history), nil
}

func (c *scriptCluster) Submit(ctx context.Context, req provisioner.SubmitRequest) (string, error) {
	tag, _ := provisioner.ParseTag(req.Comment)
	if len(c.submitErr) > 0 {
		err := c.submitErr[0]
		c.submitErr = c.submitErr[1:]
		c.calls = append(c.calls, fmt.Sprintf("submit %s/%d.%d failed: %v", tag.Chain, tag.Segment, tag.Attempt, err))
		return "", err
	}
	c.nextID++
	id := strconv.Itoa(100 + c.nextID)
	c.jobs = append(c.jobs, provisioner.Job{ID: id, Name: req.Name, State: provisioner.StatePending, Submit: c.now, Comment: req.Comment, TimeLimit: req.TimeLimit})
	c.calls = append(c.calls, fmt.Sprintf("submit %s/%d.%d: job %s", tag.Chain, tag.Segment, tag.Attempt, id))
	return id, nil
}

func (c *scriptCluster) Cancel(ctx context.Context, id string) error {
	c.calls = append(c.calls, "cancel "+id)
	return nil
}

func (c *scriptCluster) Signal(ctx context.Context, id, sig string) error {
	c.calls = append(c.calls, "signal "+id+" "+sig)
	return nil
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }
