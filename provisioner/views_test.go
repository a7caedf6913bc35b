package provisioner

import (
	"strings"
	"testing"
	"time"
)

func TestGaps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	segs := []Segment{
		{Index: 0, State: StateTimeout, Start: at(0), End: at(55)},
		{Index: 1, Attempt: 0, State: StateFailed, Start: at(60), End: at(61)}, // retried: not the final attempt
		{Index: 1, Attempt: 1, State: StateTimeout, Start: at(50), End: at(120)},
		{Index: 2, State: StateRunning, Start: at(125)},
		{Index: 3, State: StatePending},
	}
	got := Gaps(segs)
	// index 1's final attempt starts 5 min before index 0 ends (overlap);
	// index 2 starts 5 min after index 1's final attempt ends; index 3 has not started.
	if len(got) != 2 || got[2] != -5*time.Minute || got[3] != 5*time.Minute {
		t.Errorf("gaps %v", got)
	}
	v := &ChainView{Segments: segs, Gaps: got}
	if g, ok := v.LastGap(); !ok || g != 5*time.Minute {
		t.Errorf("last gap %v %v", g, ok)
	}
	if in, ov := v.Totals(); in != 5*time.Minute || ov != 5*time.Minute {
		t.Errorf("totals %v %v", in, ov)
	}
	if _, ok := Gap(Segment{State: StateRunning, End: at(1)}, Segment{Start: at(2)}); ok {
		t.Error("gap after a predecessor that has not finished")
	}
}

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
