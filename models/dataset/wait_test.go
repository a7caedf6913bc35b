package dataset_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// TestGenerateWaitReplicas checks that the replicas are the single-replay
// datasets of seeds s, s+1, s+2 concatenated in that order, whatever the
// number of workers, and that the seeds really replay differently.
func TestGenerateWaitReplicas(t *testing.T) {
	sc := modeltest.Scenario(t)
	o := dataset.WaitGenOptions{Until: sc.First.Add(4 * 24 * time.Hour)}
	var want []dataset.WaitSample
	var waits [][]float64
	for k := uint64(0); k < 3; k++ {
		d, err := dataset.GenerateWaitData(context.Background(), sc.WithSeed(sc.Config.Seed+k), o)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d.Samples...)
		var w []float64
		for _, s := range d.Samples {
			w = append(w, s.Wait)
		}
		waits = append(waits, w)
	}
	if reflect.DeepEqual(waits[0], waits[1]) && reflect.DeepEqual(waits[1], waits[2]) {
		t.Fatal("seeds s, s+1, s+2 replayed identically: replicas would add nothing")
	}
	for _, workers := range []int{1, 2, 0} {
		var calls int
		ro := o
		ro.Progress = func(done, total int) { calls++ }
		got, err := dataset.GenerateWaitReplicas(context.Background(), sc, ro, 3, workers)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Samples, want) {
			t.Fatalf("workers %d: replicas differ from the three single replays (%d against %d samples)", workers, len(got.Samples), len(want))
		}
		if calls == 0 {
			t.Errorf("workers %d: no progress reported", workers)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := dataset.GenerateWaitReplicas(ctx, sc, o, 3, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err %v, want context.Canceled", err)
	}
}

// With RecordedHistory the history features are the recorded waits: on a
// cluster with room for everyone the replay starts each job at once, but
// the trace says each of them waited 2 hours, so the median wait of the
// history is 2 h with the recorded history and 0 with the replay's.
func TestWaitDataRecordedHistory(t *testing.T) {
	t0 := time.Date(2023, 2, 1, 0, 0, 0, 0, time.UTC)
	var jobs []traces.Job
	for i := range 60 {
		sub := t0.Add(time.Duration(i) * 20 * time.Minute)
		jobs = append(jobs, traces.Job{ID: strconv.Itoa(i + 1), User: "u", Submit: sub, Start: sub.Add(2 * time.Hour),
			End: sub.Add(2*time.Hour + 10*time.Minute), TimeLimit: time.Hour, Nodes: 1, GPUs: 1})
	}
	sc, err := scenario.NewScenario("t", jobs, sim.LS6())
	if err != nil {
		t.Fatal(err)
	}
	idx := slices.Index(features.WaitSchema().Fields, "hist_wait_p50_h")
	if idx < 0 {
		t.Fatal("no hist_wait_p50_h in the wait schema")
	}
	last := func(recorded bool) float64 {
		d, err := dataset.GenerateWaitData(context.Background(), sc, dataset.WaitGenOptions{RecordedHistory: recorded})
		if err != nil {
			t.Fatal(err)
		}
		return d.Samples[len(d.Samples)-1].X[idx]
	}
	if got := last(true); got != 2 {
		t.Errorf("recorded history: median wait %v h, want 2", got)
	}
	if got := last(false); got != 0 {
		t.Errorf("replayed history: median wait %v h, want 0 (the replay starts every job at once)", got)
	}
	noJobs := *sc
	noJobs.Jobs = nil
	if _, err := dataset.GenerateWaitData(context.Background(), &noJobs, dataset.WaitGenOptions{RecordedHistory: true}); err == nil {
		t.Error("a recorded history without recorded jobs was accepted")
	}
}
