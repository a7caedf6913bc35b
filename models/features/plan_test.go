package features

import (
	"math/rand/v2"
	"testing"
)

// bruteEarliest is the first step start of p at which need fits for dur,
// checking every step start against every step its window covers.
func bruteEarliest(p *profile, need, dur int64) int64 {
	for i := range p.t {
		ok := true
		for j := i; j < len(p.t) && p.t[j] < p.t[i]+dur; j++ {
			if p.free[j] < need {
				ok = false
				break
			}
		}
		if ok {
			return p.t[i]
		}
	}
	return -1
}

// TestProfileEarliestMatchesBruteForce plans random queues with
// profile.earliest (which skips the leading steps with nothing free and
// jumps past a step that does not fit) and checks every answer against a
// brute-force search of the same profile.
func TestProfileEarliestMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		capacity := int64(1 + r.IntN(64))
		var rel [][2]int64
		used := int64(0)
		for k := r.IntN(30); k > 0; k-- {
			n := int64(1 + r.IntN(8))
			used += n
			rel = append(rel, [2]int64{int64(r.IntN(100000)), n})
		}
		p := newProfile(0, max(capacity-used, 0), rel, 50)
		// A few shapes, asked again and again as in a queue of job arrays.
		shapes := [][2]int64{{1, 3600}, {min(8, capacity), 7200}, {capacity, 600}, {2, 3600}}
		for k := 0; k < 60; k++ {
			sh := shapes[r.IntN(len(shapes))]
			need, dur := min(sh[0], capacity), sh[1]
			want := bruteEarliest(p, need, dur)
			got := p.earliest(need, dur)
			if got != want {
				t.Fatalf("trial %d query %d: earliest(%d, %d) = %d, brute force %d", trial, k, need, dur, got, want)
			}
			if got >= 0 && r.IntN(3) > 0 {
				p.reserve(got, dur, need)
			}
		}
	}
}
