package sim

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the scenarios in testdata/script, run by
// cockroachdb/datadriven: each command is followed by "----" and its
// expected output. The expected outcomes are worked out by hand in the
// comments of each file; `go test -run TestScripts -rewrite` rewrites them
// from what the simulator prints, so review any diff it makes.
//
// Commands (times are seconds since 0):
//
//	cluster [backfill=on|off] [bf_interval=S] [bf_resolution=S] [bf_window=S]
//	        [bf_max_job_user=N] [bf_min_age_reserve=S]
//	        [priority=basic|multifactor] [accrue_always=yes] [max_jobs_accrue=N]
//	        [weight_age=N] [weight_fairshare=N] [weight_size=N] [weight_qos=N]
//	        [max_age=S] [half_life=S] [calc=S]
//	  node NAMES [cpus=N] [gpus=N]            (NAMES a hostlist such as n[1-4])
//	  partition NAME nodes=HOSTLIST [exclusive=yes|no] [maxtime=S]
//	  qos NAME [priority=N] [preemptible=yes] [mode=requeue|cancel]
//	                  start a new scenario: the configuration (on top of
//	                  the test defaults: bf_resolution 1, bf_interval 10,
//	                  no decay), then one node, partition or qos per line
//	submit
//	  ID [nodes=N] [gpus=N] [limit=S] [runtime=S] [at=S] [user=U] [qos=Q]
//	     [partition=P] [dep=D] [name=N] [fail=yes] [nodelist=HOSTLIST]
//	                  add jobs to the scenario's trace, one per line
//	run [until=S]     load the trace (at the first run), run the simulator
//	                  and print every job: ID start=S end=S STATE [requeues=N]
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/script", func(t *testing.T, path string) {
		var r *scriptRun
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if td.Cmd != "cluster" && r == nil {
				t.Fatalf("%s: %s before the first cluster command", td.Pos, td.Cmd)
			}
			switch td.Cmd {
			case "cluster":
				r = newScriptRun()
				r.configure(t, td)
				return ""
			case "submit":
				r.submit(t, td)
				return ""
			case "run":
				return r.run(t, td)
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		})
	})
}

// scriptRun is one scenario: its configuration, its trace and, from the
// first run on, the simulator.
type scriptRun struct {
	cfg   Config
	jobs  []JobSpec
	sim   *Sim
	order []string
}

func newScriptRun() *scriptRun {
	c := Defaults()
	c.BFResolution = time.Second
	c.BFInterval = 10 * time.Second
	c.PriorityDecayHalfLife = 0
	return &scriptRun{cfg: c}
}

// configure applies the cluster command's arguments and its input lines.
func (r *scriptRun) configure(t *testing.T, td *datadriven.TestData) {
	for _, a := range td.CmdArgs {
		v := a.SingleVal(t)
		n := 0
		if a.Key != "backfill" && a.Key != "priority" && a.Key != "accrue_always" {
			n = atoi(t, v)
		}
		switch a.Key {
		case "backfill":
			if v != "on" && v != "off" {
				t.Fatalf("%s: backfill=%s: want on or off", td.Pos, v)
			}
			r.cfg.Backfill = v == "on"
		case "priority":
			if v != "basic" && v != "multifactor" {
				t.Fatalf("%s: priority=%s: want basic or multifactor", td.Pos, v)
			}
			r.cfg.PriorityType = "priority/" + v
		case "accrue_always":
			r.cfg.PriorityAccrueAlways = v == "yes"
		case "max_jobs_accrue":
			r.cfg.MaxJobsAccrue = n
		case "bf_max_job_user":
			r.cfg.BFMaxJobUser = n
		case "bf_min_age_reserve":
			r.cfg.BFMinAgeReserve = sec(n)
		case "bf_interval":
			r.cfg.BFInterval = sec(n)
		case "bf_resolution":
			r.cfg.BFResolution = sec(n)
		case "bf_window":
			r.cfg.BFWindow = sec(n)
		case "weight_age":
			r.cfg.PriorityWeightAge = float64(n)
		case "weight_fairshare":
			r.cfg.PriorityWeightFairshare = float64(n)
		case "weight_size":
			r.cfg.PriorityWeightJobSize = float64(n)
		case "weight_qos":
			r.cfg.PriorityWeightQOS = float64(n)
		case "max_age":
			r.cfg.PriorityMaxAge = sec(n)
		case "half_life":
			r.cfg.PriorityDecayHalfLife = sec(n)
		case "calc":
			r.cfg.PriorityCalcPeriod = sec(n)
		default:
			t.Fatalf("%s: cluster: unknown key %q", td.Pos, a.Key)
		}
	}
	for _, line := range inputLines(td.Input) {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("%s: %q: want KIND NAME key=value...", td.Pos, line)
		}
		name, m := f[1], kvs(f[2:])
		switch f[0] {
		case "node":
			names, err := expandHostlist(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				r.cfg.Nodes = append(r.cfg.Nodes, NodeConfig{Name: n, CPUs: max(atoi(t, m["cpus"]), 1), GPUs: atoi(t, m["gpus"])})
			}
		case "partition":
			p := PartitionConfig{Name: name, Exclusive: m["exclusive"] != "no", MaxTime: sec(atoi(t, m["maxtime"])), Default: len(r.cfg.Partitions) == 0}
			if m["nodes"] != "" {
				var err error
				if p.Nodes, err = expandHostlist(m["nodes"]); err != nil {
					t.Fatal(err)
				}
			}
			r.cfg.Partitions = append(r.cfg.Partitions, p)
		case "qos":
			r.cfg.QOS = append(r.cfg.QOS, QOSConfig{Name: name, Priority: atoi(t, m["priority"]), Preemptible: m["preemptible"] == "yes", PreemptMode: m["mode"]})
		default:
			t.Fatalf("%s: %q: want node, partition or qos", td.Pos, line)
		}
	}
}

// submit adds the input's jobs to the trace.
func (r *scriptRun) submit(t *testing.T, td *datadriven.TestData) {
	if r.sim != nil {
		t.Fatalf("%s: submit after run: the trace is loaded at the first run", td.Pos)
	}
	for _, line := range inputLines(td.Input) {
		f := strings.Fields(line)
		name, m := f[0], kvs(f[1:])
		var nodeList []string
		if m["nodelist"] != "" {
			var err error
			if nodeList, err = expandHostlist(m["nodelist"]); err != nil {
				t.Fatal(err)
			}
		}
		r.jobs = append(r.jobs, JobSpec{
			ID: name, Name: m["name"], User: m["user"], QOS: m["qos"], Partition: m["partition"],
			Submit: time.Unix(int64(atoi(t, m["at"])), 0), TimeLimit: sec(atoi(t, m["limit"])),
			Runtime: sec(atoi(t, m["runtime"])), Nodes: max(atoi(t, m["nodes"]), 1), GPUs: atoi(t, m["gpus"]),
			Depend: m["dep"], Fail: m["fail"] == "yes", NodeList: nodeList,
		})
		r.order = append(r.order, name)
	}
}

// run runs the simulator (until the given time, or to the end) and prints
// every job in submission-line order.
func (r *scriptRun) run(t *testing.T, td *datadriven.TestData) string {
	if r.sim == nil {
		s, err := New(r.cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.SetStart(time.Unix(0, 0))
		if err := s.Load(r.jobs); err != nil {
			t.Fatal(err)
		}
		r.sim = s
	}
	until := time.Time{}
	if td.HasArg("until") {
		var u int
		td.ScanArgs(t, "until", &u)
		until = time.Unix(int64(u), 0)
	}
	r.sim.Run(until)
	var b strings.Builder
	for _, id := range r.order {
		res, err := r.sim.Result(id)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s start=%s end=%s %s", id, ts(res.Start), ts(res.End), res.State)
		if res.Requeues > 0 {
			fmt.Fprintf(&b, " requeues=%d", res.Requeues)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func inputLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func kvs(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

func sec(n int) time.Duration { return time.Duration(n) * time.Second }

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return strconv.FormatInt(t.Unix(), 10)
}
