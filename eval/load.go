package eval

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

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
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 || scale > MaxLoadScale {
		return nil, fmt.Errorf("%w: %v (want 0 < scale ≤ %d)", ErrBadScale, scale, MaxLoadScale)
	}
	if scale == 1 {
		return slices.Clone(jobs), nil
	}
	if jitter <= 0 {
		jitter = DefaultJitter
	}
	r := rand.New(rand.NewPCG(seed, loadStream))
	var out []traces.Job
	if scale < 1 {
		out = make([]traces.Job, 0, int(float64(len(jobs))*scale)+1)
		for _, j := range jobs {
			if r.Float64() < scale {
				out = append(out, j)
			}
		}
		return out, nil // a subsequence keeps the input order
	}
	whole := int(math.Floor(scale))
	frac := scale - float64(whole)
	out = make([]traces.Job, 0, int(float64(len(jobs))*scale)+1)
	span := int64(jitter/time.Second)*2 + 1
	for _, j := range jobs {
		out = append(out, j)
		copies := whole - 1
		if frac > 0 && r.Float64() < frac {
			copies++
		}
		for k := 1; k <= copies; k++ {
			c := j
			c.ID = j.ID + "+r" + strconv.Itoa(k)
			shift := time.Duration(r.Int64N(span)-int64(jitter/time.Second)) * time.Second
			for _, t := range []*time.Time{&c.Submit, &c.Eligible, &c.Start, &c.End} {
				if !t.IsZero() {
					*t = t.Add(shift)
				}
			}
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b traces.Job) int { return cmp.Compare(a.Submit.UnixNano(), b.Submit.UnixNano()) })
	return out, nil
}
