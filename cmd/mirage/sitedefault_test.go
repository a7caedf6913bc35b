package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
)

// siteBackend is the simulated backend with a Slurm site to read: the
// 4 nodes of newChainEnv under priority/multifactor with PriorityWeightAge
// 0 (class age0), counting the readings.
type siteBackend struct {
	simBackend
	reads *atomic.Int32
}

func (b siteBackend) Site(_ context.Context, user string) (*slurm.Site, error) {
	b.reads.Add(1)
	s := &slurm.Site{Cluster: "test", Version: "22.05.8", User: "u", Config: map[string]string{"PriorityType": "priority/multifactor",
		"PriorityWeightAge": "0", "PriorityWeightFairShare": "100", "SchedulerType": "sched/backfill"},
		Partitions: []map[string]string{{"PartitionName": "batch", "Nodes": "n[1-4]", "MaxTime": "2-00:00:00", "Default": "YES", "State": "UP"}}}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		s.Nodes = append(s.Nodes, provisioner.Node{Name: n, CPUs: 8, GPUs: 4})
	}
	return s, nil
}

// The site default on a site of class age0, with a ranking that lists
// xgb-online (no model trained here), then dependency, then pin: submit
// takes dependency, says so with the reason, and status and log show it;
// the settings are read once and kept (0600) for a day; when the ranking
// changes, the daemon chooses again and records it.
func TestSubmitSiteDefault(t *testing.T) {
	e := newChainEnv(t)
	reads := new(atomic.Int32)
	e.f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return siteBackend{simBackend{e.s}, reads}, nil }
	ranking := &models.SiteRanking{Classes: map[string][]models.RankedPolicy{"age0": {
		{Policy: "xgb-online", Why: "ranked first"}, {Policy: "dependency", Why: "0.80× reactive"}, {Policy: "pin", Why: "0.95× reactive"}}}}
	e.f.SiteRanking = func() (*models.SiteRanking, error) { return ranking, nil }
	script := e.script(t, "train.sbatch", "-t 2:00:00", "-N 1")
	out, stderr, code := e.run(t, "submit", script, "--models", filepath.Join(e.dir, "no-models"))
	if code != 0 {
		t.Fatalf("submit: exit %d: %s%s", code, out, stderr)
	}
	id := chainIDRe.FindString(out)
	for _, want := range []string{"policy dependency, default: site class age0: 0.80× reactive (ranked above it but not trained here: xgb-online)",
		"(PriorityWeightAge 0: waiting earns no priority)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("submit's stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(out, "policy dependency") {
		t.Errorf("submit's output: %s", out)
	}
	cache := filepath.Join(e.state, siteCacheName)
	if st, err := os.Stat(cache); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("site cache %s: %v, %v; want a 0600 file", cache, st, err)
	}
	out, _, _ = e.run(t, "status", id)
	if !strings.Contains(out, "chosen by mirage: default: site class age0") {
		t.Errorf("status:\n%s", out)
	}
	out, _, _ = e.run(t, "log", id)
	if !strings.Contains(out, "policy dependency, chosen by mirage: default: site class age0") {
		t.Errorf("log:\n%s", out)
	}
	// A second submit within the day reads the cache, not the cluster.
	e.submitChain(t, script, "--new", "--models", filepath.Join(e.dir, "no-models"))
	if n := reads.Load(); n != 1 {
		t.Errorf("the site was read %d times for two submits within a day, want 1", n)
	}
	// A day later it is read again.
	now := e.f.Now
	e.f.Now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	e.submitChain(t, script, "--new", "--models", filepath.Join(e.dir, "no-models"))
	e.f.Now = now
	if n := reads.Load(); n != 2 {
		t.Errorf("the site was read %d times, want 2 (a day-old cache is read again)", n)
	}
	// A cache another user could have written is not read.
	if err := os.Chmod(cache, 0o666); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ = e.run(t, "submit", script, "--new", "--models", filepath.Join(e.dir, "no-models"))
	if !strings.Contains(stderr, "writable by group or others") || !strings.Contains(stderr, "the site's settings are not known") || reads.Load() != 2 {
		t.Errorf("an unsafe cache: %d reads, stderr:\n%s", reads.Load(), stderr)
	}
	if err := os.Chmod(cache, 0o600); err != nil {
		t.Fatal(err)
	}
	// The ranking now puts pin first: the daemon's next cycle chooses it.
	ranking.Classes["age0"] = []models.RankedPolicy{{Policy: "pin", Why: "0.50× reactive"}}
	if _, stderr, code := e.run(t, "daemon", "--once"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	out, _, _ = e.run(t, "log", id, "--events")
	if !strings.Contains(out, "policy pin, chosen by mirage: default: site class age0: 0.50× reactive") || !strings.Contains(out, "policy dependency → pin") {
		t.Errorf("log after the ranking changed:\n%s", out)
	}
	// A chain whose policy the user named is never chosen again.
	named := e.submitChain(t, script, "--new", "--policy", "lead")
	if _, _, code := e.run(t, "daemon", "--once"); code != 0 {
		t.Fatal("daemon failed")
	}
	if out, _, _ := e.run(t, "status", named); !strings.Contains(out, "policy    lead") || strings.Contains(out, "chosen by mirage") {
		t.Errorf("a named policy changed:\n%s", out)
	}
}
