package provisioner

import (
	"strings"
	"testing"
)

func TestDecodeSnapshot(t *testing.T) {
	t.Parallel()
	sf, err := DecodeSnapshot([]byte(`{"snapshot": {"Time": "2023-02-01T10:00:00Z", "Nodes": [{"Name": "n1", "GPUs": 3}]}, "history": [{"ID": "9"}]}`))
	if err != nil || sf.Bare || sf.Snapshot.Time.IsZero() || len(sf.Snapshot.Nodes) != 1 || len(sf.History) != 1 {
		t.Fatalf("envelope: %+v %v", sf, err)
	}
	sf, err = DecodeSnapshot([]byte("nodes:\n  - {name: n1, gpus: 10, gpusUsed: 6}\njobs:\n  - {id: \"1\", state: RUNNING, nodeList: [n1]}\n"))
	if err != nil || !sf.Bare || sf.Snapshot.Nodes[0].GPUsUsed != 6 || sf.Snapshot.Jobs[0].NodeList[0] != "n1" {
		t.Fatalf("bare YAML: %+v %v", sf, err)
	}
	if _, err := DecodeSnapshot([]byte("nodes: 5")); err == nil || !strings.Contains(err.Error(), "Snapshot") {
		t.Errorf("wrong type: %v", err)
	}
}
