package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// -update rewrites only the layout of the expected blocks (spacing); the
// expected outcomes themselves are worked out by hand in the comments of
// each testdata file.
var update = flag.Bool("update", false, "reformat testdata expected blocks")

// scriptRun executes one testdata script. Commands:
//
//	config key=value...            (backfill=on|off bf_interval= bf_resolution= bf_window= weight_age=
//	                                weight_fairshare= weight_size= weight_qos= max_age= half_life= calc=)
//	node NAMES cpus=N gpus=N       (NAMES a hostlist such as n[1-4])
//	partition NAME nodes=HOSTLIST exclusive=yes|no maxtime=S
//	qos NAME priority=N preemptible=yes mode=requeue|cancel
//	submit ID nodes=N gpus=N limit=S runtime=S at=S user=U qos=Q dep=D name=N fail=yes
//	run [until=S]                  prints every job: ID start=S end=S STATE [requeues=N]
//	reset                          starts a new scenario
//
// Times are seconds since 0. Output of a command follows "----" up to a
// blank line.
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

func (r *scriptRun) exec(t *testing.T, cmd string, args []string) string {
	t.Helper()
	m := kvs(args[min(1, len(args)):])
	name := ""
	if len(args) > 0 {
		name = args[0]
	}
	switch cmd {
	case "config":
		m = kvs(args)
		for k, v := range m {
			n := atoi(t, strings.TrimSuffix(strings.TrimSuffix(v, "on"), "off"))
			switch k {
			case "backfill":
				r.cfg.Backfill = v == "on"
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
				t.Fatalf("config: unknown key %q", k)
			}
		}
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
	case "submit":
		r.jobs = append(r.jobs, JobSpec{
			ID: name, Name: m["name"], User: m["user"], QOS: m["qos"], Partition: m["partition"],
			Submit: time.Unix(int64(atoi(t, m["at"])), 0), TimeLimit: sec(atoi(t, m["limit"])),
			Runtime: sec(atoi(t, m["runtime"])), Nodes: max(atoi(t, m["nodes"]), 1), GPUs: atoi(t, m["gpus"]),
			Depend: m["dep"], Fail: m["fail"] == "yes",
		})
		r.order = append(r.order, name)
	case "run":
		m = kvs(args)
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
		if m["until"] != "" {
			until = time.Unix(int64(atoi(t, m["until"])), 0)
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
	case "reset":
		*r = *newScriptRun()
	default:
		t.Fatalf("unknown command %q", cmd)
	}
	return ""
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return strconv.FormatInt(t.Unix(), 10)
}

func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata scripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

func runScript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []string
	r := newScriptRun()
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		out = append(out, line)
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		got := r.exec(t, f[0], f[1:])
		if i+1 < len(lines) && lines[i+1] == "----" {
			i++
			var want []string
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				i++
				want = append(want, strings.Join(strings.Fields(lines[i]), " "))
			}
			gotLines := strings.Split(strings.TrimRight(got, "\n"), "\n")
			if !slices.Equal(gotLines, want) {
				t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, i, line, strings.Join(gotLines, "\n"), strings.Join(want, "\n"))
			}
			out = append(out, "----")
			out = append(out, want...) // -update never copies outcomes, it only normalises spacing
		} else if got != "" {
			t.Errorf("%s:%d: %s: output without a ---- block:\n%s", path, i+1, line, got)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
