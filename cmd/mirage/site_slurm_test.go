package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// TestSiteLoopback runs mirage site on the loopback Slurm cluster and
// checks that the preset file it writes reproduces the settings it read.
// Expected, worked out from scripts/slurm/slurm.conf.in: node1…node4 with
// 8 CPUs and 4 tesla GPUs each; partitions debug (default, MaxTime 5 min)
// and long (60 min) on all four, not exclusive (OverSubscribe=NO);
// sched/backfill with bf_interval=5 (seconds) and Slurm's bf_window of
// 1440 min; priority/multifactor with PriorityWeightAge 1000 and
// PriorityWeightQOS 1000, PriorityMaxAge left at 7-0; and, set here for
// the second user (undone after), MaxJobsAccrue=2 on its associations:
// class accrue-cap (multifactor, age weighed, 2 ≤ 2 jobs accrue).
// Not parallel: the limit is the cluster's, seen by every test.
func TestSiteLoopback(t *testing.T) {
	conf := testenv.SlurmConf(t)
	user := testenv.SecondUser(t)
	testenv.SacctmgrAdmin(t, conf, "modify", "user", user, "set", "MaxJobsAccrue=2")
	t.Cleanup(func() { testenv.SacctmgrAdmin(t, conf, "modify", "user", user, "set", "MaxJobsAccrue=-1") })
	path := filepath.Join(t.TempDir(), "site.yaml")
	out, stderr, code := runMirage(t, "site", "--slurm-conf", conf, "--user", user, "--out", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"cluster mirage (Slurm " + testenv.SlurmRelease(), "4 nodes, 16 GPUs, 2 partitions", "PriorityWeightAge=1000",
		"PriorityWeightQOS=1000", "PartitionName=debug Nodes=node[1-4] MaxTime=00:05:00", "MaxJobsAccrue for " + user + ": 2",
		"class: accrue-cap", "only your 2 oldest eligible pending jobs accrue age", "wrote " + path} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	c, err := sim.Preset(path)
	if err != nil {
		t.Fatalf("the preset file does not load: %v", err)
	}
	if len(c.Nodes) != 4 {
		t.Fatalf("%d nodes, want 4", len(c.Nodes))
	}
	for _, n := range c.Nodes {
		if n.CPUs != 8 || n.GPUs != 4 || n.GPUType != "tesla" {
			t.Errorf("node %+v, want 8 CPUs and 4 tesla GPUs", n)
		}
	}
	want := []sim.PartitionConfig{
		{Name: "debug", Nodes: []string{"node1", "node2", "node3", "node4"}, MaxTime: 5 * time.Minute, DefaultTime: 5 * time.Minute, PriorityJobFactor: 1, Default: true},
		{Name: "long", Nodes: []string{"node1", "node2", "node3", "node4"}, MaxTime: time.Hour, DefaultTime: 10 * time.Minute, PriorityJobFactor: 1},
	}
	if len(c.Partitions) != 2 {
		t.Fatalf("partitions %+v", c.Partitions)
	}
	for i := range want {
		g, w := c.Partitions[i], want[i]
		if g.Name != w.Name || strings.Join(g.Nodes, ",") != strings.Join(w.Nodes, ",") || g.MaxTime != w.MaxTime || g.DefaultTime != w.DefaultTime ||
			g.Exclusive || g.PriorityJobFactor != 1 || g.Default != w.Default {
			t.Errorf("partition %+v, want %+v", g, w)
		}
	}
	if c.PriorityType != sim.PriorityMultifactor || c.PriorityWeightAge != 1000 || c.PriorityWeightQOS != 1000 || c.PriorityWeightFairshare != 0 ||
		c.PriorityMaxAge != 7*24*time.Hour || !c.Backfill || c.BFInterval != 5*time.Second || c.BFWindow != 1440*time.Minute || c.MaxJobsAccrue != 2 || c.PriorityAccrueAlways {
		t.Errorf("settings %+v", c)
	}
	if class, _ := sim.Classify(c); class != sim.SiteAccrueCap {
		t.Errorf("the preset is class %s, want accrue-cap", class)
	}
	// --json carries the same.
	out, stderr, code = runMirage(t, "site", "--slurm-conf", conf, "--user", user, "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var v struct {
		Class  string `json:"class"`
		Preset struct {
			Base string `json:"base"`
			Site struct {
				MaxJobsAccrue int `json:"max_jobs_accrue"`
			} `json:"site"`
		} `json:"preset"`
		Read struct {
			Config map[string]string `json:"config"`
		} `json:"read"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Class != "accrue-cap" || v.Preset.Base != "default" || v.Preset.Site.MaxJobsAccrue != 2 || v.Read.Config["PriorityWeightAge"] != "1000" {
		t.Errorf("--json %+v", v)
	}
}

// TestSubmitSiteDefaultLoopback: mirage submit without --policy on the
// loopback cluster reads its settings (multifactor, PriorityWeightAge 1000
// over Slurm's 7-day PriorityMaxAge, no accrual limit for the test's user,
// bf_window 1 day above the partitions' limits: class age-7d, worked out
// from scripts/slurm/slurm.conf.in) and takes the first policy the
// compiled-in ranking lists for that class that runs without a model
// (none is trained here), and says so; a class the ranking lacks falls back
// to pin, saying why.
func TestSubmitSiteDefaultLoopback(t *testing.T) {
	e := newE2E(t)
	script := e.script(t, "sitedefault", "sleep 5")
	ranking, err := models.LoadSiteRanking()
	if err != nil {
		t.Fatal(err)
	}
	want, why := provisioner.PolicyPin, "site class age-7d has no ranked policy that can run here"
	for _, p := range ranking.Classes["age-7d"] {
		if !models.ParseRef(p.Policy).UsesModel() {
			want, why = p.Policy, "site class age-7d: "+p.Why
			break
		}
	}
	out, stderr, code := e.run(t, nil, "submit", script, "--models", filepath.Join(e.work, "no-models"))
	if code != 0 {
		t.Fatalf("submit: exit %d: %s%s", code, out, stderr)
	}
	id := chainIDRe.FindString(out)
	t.Cleanup(func() { e.cancelAndWait(t, id) })
	if line := "mirage: policy " + want + ", default: " + why; !strings.Contains(stderr, line) {
		t.Errorf("submit's stderr lacks %q:\n%s", line, stderr)
	}
	if !strings.Contains(stderr, "(age-weighted (PriorityWeightAge 1000), full after PriorityMaxAge 7d)") {
		t.Errorf("submit does not say the class's reason:\n%s", stderr)
	}
	if out, _, _ := e.run(t, nil, "status", id); !strings.Contains(out, "policy    "+want) || !strings.Contains(out, "chosen by mirage: default: site class age-7d") {
		t.Errorf("status:\n%s", out)
	}
	if st, err := os.Stat(filepath.Join(e.state, siteCacheName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the site's settings are not kept private in the state directory: %v %v", st, err)
	}
}

// cancelAndWait cancels the chain and waits until Slurm has ended its jobs
// (none pending, running or completing), so that no job writes its output
// into the test's directory while it is removed.
func (e *e2eEnv) cancelAndWait(t *testing.T, id string) {
	t.Helper()
	e.run(t, nil, "cancel", id)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
		live := false
		for _, jobs := range squeueTagged(t, e.conf, id) {
			for _, j := range jobs {
				live = live || j.State == "PENDING" || j.State == "RUNNING" || j.State == "COMPLETING"
			}
		}
		if !live {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("chain %s: Slurm still holds a live job a minute after mirage cancel", id)
			return
		}
	}
}
