package dataset_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
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
