package models

import (
	"strings"
	"testing"
	"time"
)

// FuzzSnapshotState: predict-wait's --snapshot reader never panics and
// accepts only snapshots with a time (moved from cmd/mirage's FuzzParseSnapshotFile).
func FuzzSnapshotState(f *testing.F) {
	f.Add([]byte(`{"snapshot": {"Time": "2023-02-01T10:00:00Z", "Nodes": [{"Name": "n1", "State": "up", "GPUs": 3}]}, "history": []}`))
	f.Add([]byte(`{"Time": "2023-02-01T10:00:00Z", "Jobs": [{"ID": "1", "State": "PENDING", "Nodes": 2}]}`))
	f.Add([]byte(`{"snapshot": null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := SnapshotState(b, "f.json")
		if err == nil && (st.Snap == nil || st.Snap.Time.IsZero() || !st.Now.Equal(st.Snap.Time)) {
			t.Fatalf("accepted a snapshot without a time: %q", b)
		}
	})
}

func TestSnapshotState(t *testing.T) {
	st, err := SnapshotState([]byte(`{"snapshot": {"Time": "2023-02-01T10:00:00Z"}, "history": [{"ID": "7"}, {"ID": "8"}]}`), "s.json")
	if err != nil || st.Now.Unix() != 1675245600 || st.Source != "snapshot s.json" || len(st.Hist) != 2 || st.Hist[1].ID != "8" {
		t.Fatalf("wrapped snapshot: %+v, %v", st, err)
	}
	if st, err := SnapshotState([]byte(`{"Time": "2023-02-01T10:00:00Z"}`), "bare.json"); err != nil || st.Now.Unix() != 1675245600 || st.Hist != nil {
		t.Fatalf("bare snapshot: %+v, %v", st, err)
	}
	for in, want := range map[string]string{
		`{"snapshot": {"Nodes": []}}`: "snapshot has no time",
		`{"Jobs": []}`:                `not a snapshot (want {"snapshot": {...}, "history": [...]}, as --save-snapshot writes)`,
		`[]`:                          `not a snapshot (want {"snapshot": {...}, "history": [...]}, as --save-snapshot writes)`,
	} {
		if _, err := SnapshotState([]byte(in), "x"); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestWaitQueryParseSbatch(t *testing.T) {
	for _, tt := range []struct {
		limit, gres string
		wantLimit   time.Duration
		wantGPUs    int
	}{
		{"48:00:00", "", 48 * time.Hour, -1},
		{"2-00:00:00", "gpu:a100:3", 48 * time.Hour, 3},
		{"90", "gpu:2", 90 * time.Minute, 2},
	} {
		q := WaitQuery{Nodes: 2}
		if err := q.ParseSbatch(tt.limit, tt.gres); err != nil || q.TimeLimit != tt.wantLimit || q.GPUsPerNode != tt.wantGPUs || q.Nodes != 2 {
			t.Errorf("-t %s --gres %q: %+v, %v", tt.limit, tt.gres, q, err)
		}
	}
	for _, tt := range []struct {
		nodes       int
		limit, gres string
		want        string
	}{
		{0, "1:00:00", "", "-N 0: want at least 1 node"},
		{1, "soon", "", `-t "soon": want a finite Slurm time limit such as 48:00:00 or 2-00:00:00`},
		{1, "UNLIMITED", "", `-t "UNLIMITED": want a finite Slurm time limit such as 48:00:00 or 2-00:00:00`},
		{1, "0", "", `-t "0": want a finite Slurm time limit such as 48:00:00 or 2-00:00:00`},
		{1, "1:00:00", "gpu:x:y", `--gres "gpu:x:y": `},
	} {
		q := WaitQuery{Nodes: tt.nodes}
		if err := q.ParseSbatch(tt.limit, tt.gres); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("-N %d -t %s --gres %q: %v, want %q", tt.nodes, tt.limit, tt.gres, err, tt.want)
		}
	}
}
