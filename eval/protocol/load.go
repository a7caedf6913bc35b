package protocol

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"
)

// ErrBadScale is returned for a load scale that is not a positive finite
// number no larger than MaxLoadScale.
var ErrBadScale = errors.New("bad load scale")

// MaxLoadScale bounds replication (a copy per job per unit of scale).
const MaxLoadScale = 20

// DefaultJitter is the half-width of the uniform shift of replicated jobs'
// submit times.
const DefaultJitter = time.Hour

// loadStream separates the load-scaling random stream from other uses of a
// run's seed.
const loadStream = 0x6c6f6164 // "load"

// ScaleLoad scales a trace's arrival rate by scale, seeded:
//   - scale < 1 thins: each job is kept with probability scale;
//   - scale > 1 replicates: each job is kept and gets ⌊scale⌋−1 extra
//     copies, plus one more with probability scale−⌊scale⌋; a copy's
//     submit, eligible, start and end times are shifted together by a
//     uniform draw in [−jitter, +jitter] (whole seconds), so its wait and
//     runtime are those of the original, and its id is "ID+rK";
//   - scale = 1 returns the trace unchanged.
//
// The result is sorted by submit time (stable) and shares nothing with the
// input. jitter ≤ 0 means DefaultJitter.
func ScaleLoad(jobs []traces.Job, scale float64, seed uint64, jitter time.Duration) ([]traces.Job, error) {
	out, err := scaleArrivals(jobs, scale, seed, jitter, func(j traces.Job, k int, shift time.Duration) traces.Job {
		j.ID += "+r" + strconv.Itoa(k)
		for _, t := range []*time.Time{&j.Submit, &j.Eligible, &j.Start, &j.End} {
			if !t.IsZero() {
				*t = t.Add(shift)
			}
		}
		return j
	})
	if err != nil || scale <= 1 {
		return out, err
	}
	slices.SortStableFunc(out, func(a, b traces.Job) int { return cmp.Compare(a.Submit.UnixNano(), b.Submit.UnixNano()) })
	return out, nil
}

// ScaleScenario scales a prepared scenario's arrivals the way ScaleLoad
// scales a trace, on its replay specs: recorded holds were folded into the
// submit times from the trace as recorded (scenario.NewScenario), so a
// thinned or replicated trace keeps them; a copy's submit time is shifted
// (its runtime, size and user are the original's) and its id is "ID+rK".
// The specs carry no dependencies (traces record none), so thinning cannot
// orphan one. The result's Name gets "×scale" and Scale is multiplied.
func ScaleScenario(sc *scenario.Scenario, scale float64, seed uint64, jitter time.Duration) (*scenario.Scenario, error) {
	specs, err := scaleArrivals(sc.Specs, scale, seed, jitter, func(j sim.JobSpec, k int, shift time.Duration) sim.JobSpec {
		j.ID += "+r" + strconv.Itoa(k)
		j.Submit = j.Submit.Add(shift)
		j.Depend = ""
		return j
	})
	if err != nil {
		return nil, err
	}
	if scale == 1 {
		return sc, nil
	}
	slices.SortStableFunc(specs, func(a, b sim.JobSpec) int { return cmp.Compare(a.Submit.UnixNano(), b.Submit.UnixNano()) })
	out := *sc
	out.Specs = specs
	out.Scale = sc.Scale * scale
	out.Name = fmt.Sprintf("%s×%g", sc.Name, scale)
	return &out, nil
}

// scaleArrivals is the common core of ScaleLoad and ScaleScenario: it
// thins or replicates items in input order (copies follow their original)
// and returns a new slice.
func scaleArrivals[T any](items []T, scale float64, seed uint64, jitter time.Duration, copyOf func(item T, k int, shift time.Duration) T) ([]T, error) {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 || scale > MaxLoadScale {
		return nil, fmt.Errorf("%w: %v (want 0 < scale ≤ %d)", ErrBadScale, scale, MaxLoadScale)
	}
	if scale == 1 {
		return slices.Clone(items), nil
	}
	if jitter <= 0 {
		jitter = DefaultJitter
	}
	r := rand.New(rand.NewPCG(seed, loadStream))
	out := make([]T, 0, int(float64(len(items))*scale)+1)
	if scale < 1 {
		for _, it := range items {
			if r.Float64() < scale {
				out = append(out, it)
			}
		}
		return out, nil
	}
	whole := int(math.Floor(scale))
	frac := scale - float64(whole)
	sec := int64(jitter / time.Second)
	for _, it := range items {
		out = append(out, it)
		copies := whole - 1
		if frac > 0 && r.Float64() < frac {
			copies++
		}
		for k := 1; k <= copies; k++ {
			shift := time.Duration(r.Int64N(2*sec+1)-sec) * time.Second
			out = append(out, copyOf(it, k, shift))
		}
	}
	return out, nil
}
