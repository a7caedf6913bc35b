package sim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Each cell of the site grid is the class it is named for: ls6 (age 1000 >
// fair-share 500, max age 7 days, bf_window 2 days = the 48 h limit) is
// age-7d; the others each change one thing that Classify tests before the
// max age (priority/basic; MaxJobsAccrue 1 ≤ 2; age 0; fair-share 10000 >
// age 1000; bf_window 1 day < 48 h) or the max age itself (1 day ≤ 2 days,
// 14 days ≥ 10 days; age 10000 > fair-share 500).
func TestSiteGridClasses(t *testing.T) {
	seen := map[SiteClass]bool{}
	for _, cell := range SiteGrid() {
		c, err := cell.Config()
		if err != nil {
			t.Fatalf("%s: %v", cell.Name, err)
		}
		if got, why := Classify(c); got != cell.Class {
			t.Errorf("%s: classified %s (%s), want %s", cell.Name, got, why, cell.Class)
		}
		if seen[cell.Class] {
			t.Errorf("class %s twice in the grid", cell.Class)
		}
		seen[cell.Class] = true
		if len(c.Nodes) != 72 || c.Partitions[0].MaxTime != 48*time.Hour {
			t.Errorf("%s: %d nodes, limit %s: want ls6's 72 and 48h", cell.Name, len(c.Nodes), c.Partitions[0].MaxTime)
		}
	}
	if len(seen) != 8 {
		t.Errorf("%d classes in the grid, want 8", len(seen))
	}
	// A cell changes only what it names: age0 is ls6 with age weight 0.
	age0, _ := GridCellNamed(string(SiteNoAge))
	c, _ := age0.Config()
	want := LS6()
	want.PriorityWeightAge = 0
	if !reflect.DeepEqual(c, want) {
		t.Errorf("age0 differs from ls6 beyond the age weight:\n%+v\n%+v", c, want)
	}
	// ACCRUE_ALWAYS lifts the accrual limit: ls6 with both is age-7d.
	accr, _ := GridCellNamed(string(SiteAccrueCap))
	c, _ = accr.Config()
	c.PriorityAccrueAlways = true
	if got, _ := Classify(c); got != SiteAge7d {
		t.Errorf("accrual limit with ACCRUE_ALWAYS: %s, want age-7d", got)
	}
}

// The words: a successor queued 48 h early under ls6 gains 1000 × 48 h /
// 168 h = 285.7, printed 286; under age 0 none, said so; a one-day
// bf_window below the 2-day limit is said to cost the reservation.
func TestExplain(t *testing.T) {
	meaning := func(fs []Finding, setting string) string {
		var out []string
		for _, f := range fs {
			if f.Setting == setting {
				out = append(out, f.Meaning)
			}
		}
		return strings.Join(out, " | ")
	}
	fs := Explain(LS6(), 48*time.Hour, SiteFacts{})
	if m := meaning(fs, "PriorityWeightAge"); !strings.Contains(m, "gains up to 286 priority points") {
		t.Errorf("ls6 age: %q", m)
	}
	if m := meaning(fs, "PriorityWeightFairshare"); !strings.Contains(m, "up to 500 points") || !strings.Contains(m, "below the age weight") {
		t.Errorf("ls6 fair-share: %q", m)
	}
	c := LS6()
	c.PriorityWeightAge = 0
	if m := meaning(Explain(c, 0, SiteFacts{}), "PriorityWeightAge"); !strings.Contains(m, "gains no priority here; pin only wins ties") {
		t.Errorf("age 0: %q", m)
	}
	c = LS6()
	c.BFWindow = 24 * time.Hour
	if m := meaning(Explain(c, 0, SiteFacts{}), "SchedulerParameters"); !strings.Contains(m, "plans only 1d ahead, less than the 2d limit") {
		t.Errorf("bf_window 1d: %q", m)
	}
	c = Defaults()
	if m := meaning(Explain(c, time.Hour, SiteFacts{}), "PriorityType"); !strings.Contains(m, "first submitted, first served") {
		t.Errorf("basic: %q", m)
	}
	fs = Explain(LS6(), 0, SiteFacts{AccountingErr: "slurmdbd down", GrpJobsAccrue: map[string]int{"a": 5}, NoReserve: []string{"low"}, LimitsNotEnforced: true})
	for setting, want := range map[string]string{"sacctmgr": "slurmdbd down", "GrpJobsAccrue": "at most 5 pending jobs of account a", "QOS low": "no backfill reservation",
		"AccountingStorageEnforce": "change nothing"} {
		if m := meaning(fs, setting); !strings.Contains(m, want) {
			t.Errorf("%s: %q, want %q in it", setting, m, want)
		}
	}
}

// A preset written from a live site (slurm.conf lines, an accrual limit,
// no calibrated parameters) reads back as the configuration it was built
// from; calibrated parameters without nodes are refused, not ignored.
func TestPresetFileSlurmConfText(t *testing.T) {
	two := 2
	pf := PresetFile{Base: "default", WrittenBy: "mirage site (test)", Site: SiteParams{MaxJobsAccrue: &two},
		SlurmConfText: "PriorityType=priority/multifactor\nPriorityWeightAge=1000\nPriorityMaxAge=1-00:00:00\nSchedulerParameters=bf_window=60\n" +
			"NodeName=n[1-3] CPUs=8 Gres=gpu:a100:4\nPartitionName=gpu Nodes=n[1-3] MaxTime=2-00:00:00 Default=YES OverSubscribe=EXCLUSIVE\n"}
	want, err := pf.Build("test")
	if err != nil {
		t.Fatal(err)
	}
	// By hand: 3 nodes of 4 GPUs, one exclusive 2-day partition,
	// multifactor with age 1000 full after a day, bf_window 60 min, 2 jobs accrue.
	if len(want.Nodes) != 3 || want.Nodes[2].GPUs != 4 || want.Nodes[2].GPUType != "a100" || len(want.Partitions) != 1 || !want.Partitions[0].Exclusive ||
		want.Partitions[0].MaxTime != 48*time.Hour || want.PriorityWeightAge != 1000 || want.PriorityMaxAge != 24*time.Hour || want.BFWindow != time.Hour || want.MaxJobsAccrue != 2 {
		t.Fatalf("built %+v", want)
	}
	path := filepath.Join(t.TempDir(), "site.yaml")
	if err := WritePresetFile(path, pf); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "nodes:") || !strings.Contains(string(b), "written by `mirage site (test)`") {
		t.Errorf("file:\n%s", b)
	}
	got, err := Preset(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("base: ls6\npriority_weight_age: 0\nbf_interval: 30s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Preset(bad); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "without nodes") {
		t.Errorf("parameters without nodes: %v", err)
	}
}
