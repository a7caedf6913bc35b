package scenario

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mirage-gpu/mirage/sim"
)

// ForkWork is one worker of Forks: called with the index of a point and a
// fork of the base replay at that point, on the worker's goroutine.
type ForkWork func(ctx context.Context, i int, fork *sim.Sim) error

// Forks replays base to each of points in order, on the calling goroutine,
// and hands a fork of it at each point to one of workers goroutines (0:
// all cores). Each goroutine builds its worker once with newWorker and
// calls it for every fork it receives, also after a failure elsewhere has
// cancelled ctx (the worker then returns at once, after any bookkeeping it
// owes the point). The first failure, in point order, is returned naming
// its point; progress, when set, is called after each point, serialised.
// Results the workers store by index therefore do not depend on workers.
func Forks(ctx context.Context, base *sim.Sim, points []time.Time, workers int, progress func(done, total int), newWorker func() ForkWork) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		i int
		s *sim.Sim
	}
	errs := make([]error, len(points))
	jobs := make(chan job, workers)
	var wg sync.WaitGroup
	var done atomic.Int64
	var progMu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := newWorker()
			for jb := range jobs {
				if errs[jb.i] = work(ctx, jb.i, jb.s); errs[jb.i] != nil {
					cancel()
				}
				d := done.Add(1)
				if progress != nil {
					progMu.Lock()
					progress(int(d), len(points))
					progMu.Unlock()
				}
			}
		}()
	}
	for i, t := range points {
		if ctx.Err() != nil {
			break
		}
		base.Run(t)
		jobs <- job{i, base.Fork()}
	}
	close(jobs)
	wg.Wait()
	for i := range points {
		if errs[i] != nil {
			return fmt.Errorf("injection %s: %w", points[i].Format(time.RFC3339), errs[i])
		}
	}
	return ctx.Err()
}
