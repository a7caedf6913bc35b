package protocol

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// trace of n jobs, one per minute, each waiting 10 min and running 1 h.
func loadTrace(n int) []traces.Job {
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	jobs := make([]traces.Job, n)
	for i := range jobs {
		sub := t0.Add(time.Duration(i) * time.Minute)
		jobs[i] = traces.Job{ID: strconv.Itoa(i), Submit: sub, Start: sub.Add(10 * time.Minute),
			End: sub.Add(70 * time.Minute), TimeLimit: 2 * time.Hour, Nodes: 1}
	}
	return jobs
}

func TestScaleLoadBadScale(t *testing.T) {
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1), MaxLoadScale + 1} {
		if _, err := ScaleLoad(loadTrace(3), s, 1, 0); !errors.Is(err, ErrBadScale) {
			t.Errorf("scale %v: err %v, want ErrBadScale", s, err)
		}
	}
}

func TestScaleLoadIdentity(t *testing.T) {
	in := loadTrace(50)
	out, err := ScaleLoad(in, 1, 1, 0)
	if err != nil || len(out) != 50 {
		t.Fatalf("len %d err %v", len(out), err)
	}
	for i := range in {
		if out[i] != in[i] {
			t.Fatalf("job %d changed", i)
		}
	}
	out[0].ID = "x"
	if in[0].ID == "x" {
		t.Error("result shares the input")
	}
}

func TestScaleLoadThin(t *testing.T) {
	in := loadTrace(10000)
	out, err := ScaleLoad(in, 0.8, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Binomial(10000, 0.8): mean 8000, sd √(10000·0.8·0.2) = 40; allow 5 sd.
	if len(out) < 7800 || len(out) > 8200 {
		t.Errorf("kept %d of 10000 at 0.8", len(out))
	}
	// A subsequence of unchanged jobs in input order.
	last := -1
	for _, j := range out {
		i, _ := strconv.Atoi(j.ID)
		if i <= last || j != in[i] {
			t.Fatalf("job %s changed or out of order", j.ID)
		}
		last = i
	}
	again, _ := ScaleLoad(in, 0.8, 3, 0)
	other, _ := ScaleLoad(in, 0.8, 4, 0)
	if !sameIDs(out, again) {
		t.Error("same seed, different thinning")
	}
	if sameIDs(out, other) {
		t.Error("different seed, same thinning")
	}
}

func TestScaleLoadReplicate(t *testing.T) {
	in := loadTrace(1000)
	out, err := ScaleLoad(in, 2, 5, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// scale 2: every job once more, exactly.
	if len(out) != 2000 {
		t.Fatalf("len %d, want 2000", len(out))
	}
	seen := map[string]bool{}
	byID := map[string]traces.Job{}
	for _, j := range in {
		byID[j.ID] = j
	}
	for i, j := range out {
		if seen[j.ID] {
			t.Fatalf("duplicate id %s", j.ID)
		}
		seen[j.ID] = true
		if i > 0 && j.Submit.Before(out[i-1].Submit) {
			t.Fatalf("not sorted at %d", i)
		}
		orig, copy, ok := strings.Cut(j.ID, "+r")
		o := byID[orig]
		if !ok {
			if j != o {
				t.Fatalf("original %s changed", j.ID)
			}
			continue
		}
		if copy != "1" {
			t.Fatalf("copy id %s at scale 2", j.ID)
		}
		shift := j.Submit.Sub(o.Submit)
		if shift < -30*time.Minute || shift > 30*time.Minute || shift%time.Second != 0 {
			t.Errorf("copy %s shifted %v", j.ID, shift)
		}
		if j.Wait() != o.Wait() || j.Runtime() != o.Runtime() || j.TimeLimit != o.TimeLimit {
			t.Errorf("copy %s: wait %v runtime %v, original %v %v", j.ID, j.Wait(), j.Runtime(), o.Wait(), o.Runtime())
		}
	}
	// scale 1.5: half the jobs get a copy; Binomial(1000, 0.5) sd ≈ 16.
	out, _ = ScaleLoad(in, 1.5, 5, 0)
	if len(out) < 1420 || len(out) > 1580 {
		t.Errorf("scale 1.5 gives %d jobs", len(out))
	}
	// scale 3: exactly two copies each.
	out, _ = ScaleLoad(loadTrace(10), 3, 1, 0)
	if len(out) != 30 || countWith(out, "+r1") != 10 || countWith(out, "+r2") != 10 {
		t.Errorf("scale 3: %d jobs, first copies %d, second copies %d", len(out), countWith(out, "+r1"), countWith(out, "+r2"))
	}
}

func sameIDs(a, b []traces.Job) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

func countWith(js []traces.Job, suffix string) int {
	n := 0
	for _, j := range js {
		if strings.HasSuffix(j.ID, suffix) {
			n++
		}
	}
	return n
}

func TestScaleScenario(t *testing.T) {
	sc, err := scenario.NewScenario("t", loadTrace(2000), sim.LS6())
	if err != nil {
		t.Fatal(err)
	}
	if same, err := ScaleScenario(sc, 1, 1, 0); err != nil || same != sc {
		t.Errorf("scale 1: %p %v, want the scenario itself", same, err)
	}
	if _, err := ScaleScenario(sc, -1, 1, 0); !errors.Is(err, ErrBadScale) {
		t.Errorf("scale -1: %v", err)
	}
	thin, err := ScaleScenario(sc, 0.5, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Binomial(2000, 0.5): sd ≈ 22; allow 5 sd.
	if n := len(thin.Specs); n < 890 || n > 1110 || thin.Scale != 0.5 || thin.Name != "t×0.5" || len(sc.Specs) != 2000 {
		t.Errorf("thinned to %d specs, scale %v, name %q (original %d)", n, thin.Scale, thin.Name, len(sc.Specs))
	}
	rep, err := ScaleScenario(sc, 2, 2, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Specs) != 4000 {
		t.Fatalf("replicated to %d specs, want 4000", len(rep.Specs))
	}
	orig := map[string]sim.JobSpec{}
	for _, s := range sc.Specs {
		orig[s.ID] = s
	}
	for i, s := range rep.Specs {
		if i > 0 && s.Submit.Before(rep.Specs[i-1].Submit) {
			t.Fatalf("specs not in submit order at %d", i)
		}
		id, k, isCopy := strings.Cut(s.ID, "+r")
		o := orig[id]
		if !isCopy {
			continue
		}
		if k != "1" || s.Runtime != o.Runtime || s.Nodes != o.Nodes || s.User != o.User {
			t.Errorf("copy %s differs from its original beyond the submit time", s.ID)
		}
		if d := s.Submit.Sub(o.Submit); d < -10*time.Minute || d > 10*time.Minute {
			t.Errorf("copy %s shifted %v", s.ID, d)
		}
	}
	// The replay loads: ids are unique and the simulator takes the specs.
	if _, err := rep.NewSim(); err != nil {
		t.Errorf("replicated scenario does not load: %v", err)
	}
}
