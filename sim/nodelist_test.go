package sim

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// NodeList and Exclude of a submitted request restrict where the job may run
// (sbatch --nodelist/--exclude, used by the team rules as packing hints).
func TestSubmitNodeListExclude(t *testing.T) {
	cfg := Defaults()
	for _, n := range []string{"n1", "n2", "n3"} {
		cfg.Nodes = append(cfg.Nodes, NodeConfig{Name: n, CPUs: 8, GPUs: 4})
	}
	cfg.Partitions = []PartitionConfig{{Name: "gpu", Default: true}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetStart(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	submit := func(req provisioner.SubmitRequest) string {
		t.Helper()
		req.TimeLimit, req.GPUs = time.Hour, 2
		id, err := s.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Without hints first fit takes n1; --nodelist=n3 pins n3; --exclude=n1,n3 leaves n2.
	free := submit(provisioner.SubmitRequest{Name: "free"})
	pinned := submit(provisioner.SubmitRequest{Name: "pinned", NodeList: []string{"n3"}})
	excl := submit(provisioner.SubmitRequest{Name: "excl", Exclude: []string{"n1", "n3"}})
	// n3 has 2 of 4 GPUs left: a 2-GPU job pinned there starts; the next one waits.
	pinned2 := submit(provisioner.SubmitRequest{Name: "pinned2", NodeList: []string{"n3"}})
	waits := submit(provisioner.SubmitRequest{Name: "waits", NodeList: []string{"n3"}})
	s.Run(s.Now()) // the main pass for submissions made between runs
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{free: "n1", pinned: "n3", excl: "n2", pinned2: "n3", waits: ""}
	for id, node := range want {
		j := snap.Job(id)
		if j == nil {
			t.Fatalf("job %s missing", id)
		}
		got := ""
		if j.State == provisioner.StateRunning {
			got = j.NodeList[0]
		}
		if got != node {
			t.Errorf("job %s (%s) on %q, want %q", id, j.Name, got, node)
		}
	}
	if !slices.Equal([]int{snap.Nodes[0].GPUsUsed, snap.Nodes[1].GPUsUsed, snap.Nodes[2].GPUsUsed}, []int{2, 2, 4}) {
		t.Errorf("GPUs used %+v, want 2/2/4", snap.Nodes)
	}
	if _, err := s.Submit(ctx, provisioner.SubmitRequest{Name: "bad", GPUs: 1, NodeList: []string{"n9"}}); !errors.Is(err, provisioner.ErrRejected) {
		t.Errorf("unknown node in the node list: %v, want ErrRejected", err)
	}
}
