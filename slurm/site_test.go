package slurm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner"
)

func testdataBytes(t *testing.T, name string) []byte {
	t.Helper()
	return []byte(readTestdata(t, name))
}

// The loopback cluster's `scontrol show config` (22.05, recorded): the
// values its slurm.conf (scripts/slurm/slurm.conf.in) sets, and Slurm's
// defaults for those it leaves out (PriorityMaxAge 7-0, PriorityFlags
// empty, PriorityWeightFairShare 0).
func TestParseConfig22(t *testing.T) {
	m, err := ParseConfig(testdataBytes(t, "scontrol-config-22.05.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"ClusterName":              "mirage",
		"SLURM_VERSION":            "22.05.8",
		"PriorityType":             "priority/multifactor",
		"PriorityWeightAge":        "1000",
		"PriorityWeightQOS":        "1000",
		"PriorityWeightFairShare":  "0",
		"PriorityMaxAge":           "7-00:00:00",
		"PriorityFlags":            "",
		"SchedulerType":            "sched/backfill",
		"SchedulerParameters":      "bf_interval=5,sched_min_interval=0",
		"AccountingStorageEnforce": "associations,limits,qos",
		"BurstBufferType":          "", // (null)
		"SlurmctldHost[0]":         "vm(127.0.0.1)",
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %q", k, got, ok, want)
		}
	}
	if _, ok := m["Slurmctld(primary)"]; ok {
		t.Error("the status line was read as a setting")
	}
}

func TestParseConfigEdges(t *testing.T) {
	in := "Configuration data as of 2026-01-01T00:00:00\nA = 1\nA = 2\nB   =   x y  \nnot a setting\n  = 3\nC = (null)\n\nCgroup Support Configuration:\nD = 4\n"
	m, err := ParseConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "x y", "C": "", "D": "4"}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %q, want %q", m, want)
	}
	for _, bad := range []string{"", "slurm_load_ctl_conf error: Unable to contact slurm controller\n"} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParsePartitionRecords22(t *testing.T) {
	ps, err := ParsePartitionRecords(testdataBytes(t, "scontrol-partition-22.05.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// slurm.conf.in: debug Nodes=node[1-4] Default=YES MaxTime=5
	// DefaultTime=5; long MaxTime=60 DefaultTime=10.
	if len(ps) != 2 {
		t.Fatalf("%d partitions, want 2", len(ps))
	}
	for i, want := range []map[string]string{
		{"PartitionName": "debug", "Nodes": "node[1-4]", "Default": "YES", "MaxTime": "00:05:00", "DefaultTime": "00:05:00", "State": "UP", "OverSubscribe": "NO"},
		{"PartitionName": "long", "Nodes": "node[1-4]", "Default": "NO", "MaxTime": "01:00:00", "DefaultTime": "00:10:00", "State": "UP"},
	} {
		for k, v := range want {
			if ps[i][k] != v {
				t.Errorf("partition %d %s = %q, want %q", i, k, ps[i][k], v)
			}
		}
	}
	if ps, err := ParsePartitionRecords([]byte("No partitions in the system\n")); err != nil || len(ps) != 0 {
		t.Errorf("empty list: %v %v", ps, err)
	}
	if _, err := ParsePartitionRecords([]byte("Nodes=a MaxTime=1\n")); err == nil {
		t.Error("a record without PartitionName: no error")
	}
}

// QOS and associations as recorded with limits set on the loopback
// cluster: sacctmgr modify user mirageb set MaxJobsAccrue=2; account
// teama GrpJobsAccrue=5; QOS scavenger flags=NoReserve
// MaxJobsAccruePerUser=3.
func TestParseQOSAndAssociations22(t *testing.T) {
	qos, err := ParseQOS(testdataBytes(t, "sacctmgr-qos-limits-22.05.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantQOS := []QOS{{Name: "normal", Priority: 10}, {Name: "scavenger", MaxJobsAccruePerUser: 3, Flags: []string{"NoReserve"}}, {Name: "preemptible"}}
	if !reflect.DeepEqual(qos, wantQOS) {
		t.Errorf("QOS %+v, want %+v", qos, wantQOS)
	}
	as, err := ParseAssociations(testdataBytes(t, "sacctmgr-assoc-limits-22.05.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 6 {
		t.Fatalf("%d associations, want 6", len(as))
	}
	if a := as[0]; a.Account != "teama" || a.User != "" || a.GrpJobsAccrue != 5 || !reflect.DeepEqual(a.QOS, []string{"normal"}) {
		t.Errorf("account teama: %+v", a)
	}
	if a := as[1]; a.Account != "teama" || a.User != "mirageb" || a.MaxJobsAccrue != 2 || a.DefaultQOS != "" {
		t.Errorf("teama/mirageb: %+v", a)
	}
	if a := as[2]; a.User != "root" || a.DefaultQOS != "normal" || !reflect.DeepEqual(a.QOS, []string{"normal", "preemptible", "scavenger"}) {
		t.Errorf("teama/root: %+v", a)
	}
	for _, bad := range []string{"normal|10|x|||\n", "normal|10\n", "|1|||||\n"} {
		if _, err := ParseQOS([]byte(bad)); err == nil {
			t.Errorf("QOS %q: no error", bad)
		}
	}
	for _, bad := range []string{"a|u||-1|||\n", "|u|||||\n", "a|u\n"} {
		if _, err := ParseAssociations([]byte(bad)); err == nil {
			t.Errorf("association %q: no error", bad)
		}
	}
}

// AccrueLimit takes the smallest limit over the user's associations and
// their default QOS, only where slurmctld enforces limits.
func TestAccrueLimit(t *testing.T) {
	s := &Site{User: "u", Config: map[string]string{"AccountingStorageEnforce": "associations,limits"},
		QOS: []QOS{{Name: "normal", MaxJobsAccruePerUser: 4}, {Name: "low", MaxJobsAccruePerUser: 3}},
		Associations: []Association{
			{Account: "a", User: "u", MaxJobsAccrue: 5},     // 5, and normal's 4 (no default QOS)
			{Account: "b", User: "u", DefaultQOS: "low"},    // low's 3: the smallest
			{Account: "c", User: "other", MaxJobsAccrue: 1}, // another user's
			{Account: "a", MaxJobsAccrue: 1},                // the account's own row
		}}
	if n, from := s.AccrueLimit(); n != 3 || from != "MaxJobsAccruePerUser of QOS low" {
		t.Errorf("limit %d from %q, want 3 from QOS low", n, from)
	}
	s.Config["AccountingStorageEnforce"] = "associations"
	if n, _ := s.AccrueLimit(); n != 0 {
		t.Errorf("limits not enforced: %d, want 0", n)
	}
	s.Config["AccountingStorageEnforce"] = "safe"
	s.QOS = nil
	if n, from := s.AccrueLimit(); n != 5 || !strings.Contains(from, "a/u") {
		t.Errorf("safe enforces limits: %d from %q, want 5 from a/u", n, from)
	}
}

// SlurmConf renders the recorded loopback site as slurm.conf lines: the
// settings the simulator reads, a NodeName line per node, a PartitionName
// line per partition that is up and has nodes.
func TestSiteSlurmConf(t *testing.T) {
	cfg, err := ParseConfig(testdataBytes(t, "scontrol-config-22.05.txt"))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ParsePartitionRecords(testdataBytes(t, "scontrol-partition-22.05.txt"))
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, map[string]string{"PartitionName": "empty", "Nodes": "(null)", "State": "UP"},
		map[string]string{"PartitionName": "down", "Nodes": "n1", "State": "DOWN"})
	s := &Site{Cluster: "mirage", Version: "22.05.8", Config: cfg, Partitions: parts,
		Nodes: []provisioner.Node{{Name: "node1", CPUs: 8, GPUs: 4, GPUType: "tesla"}, {Name: "cpu1", CPUs: 2}}}
	b, err := s.SlurmConf()
	if err != nil {
		t.Fatal(err)
	}
	want := `# read from cluster mirage (Slurm 22.05.8)
SchedulerType=sched/backfill
SelectType=select/cons_tres
SchedulerParameters=bf_interval=5,sched_min_interval=0
PriorityType=priority/multifactor
PriorityFlags=
PriorityWeightAge=1000
PriorityWeightFairShare=0
PriorityWeightJobSize=0
PriorityWeightPartition=0
PriorityWeightQOS=1000
PriorityMaxAge=7-00:00:00
PriorityDecayHalfLife=7-00:00:00
PriorityCalcPeriod=00:05:00
PriorityFavorSmall=No
NodeName=node1 CPUs=8 Gres=gpu:tesla:4
NodeName=cpu1 CPUs=2
PartitionName=debug Nodes=node[1-4] MaxTime=00:05:00 DefaultTime=00:05:00 Default=YES OverSubscribe=NO PriorityJobFactor=1
PartitionName=long Nodes=node[1-4] MaxTime=01:00:00 DefaultTime=00:10:00 Default=NO OverSubscribe=NO PriorityJobFactor=1
`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
	// A value a slurm.conf line cannot carry is refused, not mangled.
	for _, bad := range []*Site{
		{Config: map[string]string{"SchedulerParameters": "bf_window=1 #x"}},
		{Config: map[string]string{}, Nodes: []provisioner.Node{{Name: "n 1"}}},
		{Config: map[string]string{}, Nodes: []provisioner.Node{{Name: "a=b"}}},
		{Config: map[string]string{}, Partitions: []map[string]string{{"PartitionName": "p q", "State": "UP", "Nodes": "n1"}}},
	} {
		if _, err := bad.SlurmConf(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
