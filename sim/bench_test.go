package sim

import (
	"context"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

func benchReplay(b *testing.B, specs []JobSpec) {
	b.ReportAllocs()
	var days float64
	for b.Loop() {
		s := newLoaded(b, specs)
		first := s.specs[0].submit
		s.Run(time.Time{})
		days = float64(s.now-first) / 86400
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(len(specs))/sec, "jobs/s")
	b.ReportMetric(days/sec, "simdays/s")
}

// BenchmarkReplayLS6 replays the shared LS6 cut (17,975 jobs) with backfill.
func BenchmarkReplayLS6(b *testing.B) {
	jobs := loadLS6(b)
	_, elig := Holds(jobs, HoldOptions{Nodes: 84})
	specs, _, _ := FromTraces(jobs, elig)
	benchReplay(b, specs)
}

// BenchmarkReplaySynthetic replays 18,000 generated LS6-like jobs.
func BenchmarkReplaySynthetic(b *testing.B) {
	benchReplay(b, synthJobs(18000, 1))
}

// BenchmarkForkProbe48h forks a loaded simulator mid-trace, submits one
// 8-node probe and runs 48 simulated hours.
func BenchmarkForkProbe48h(b *testing.B) {
	jobs := synthJobs(18000, 1)
	s := newLoaded(b, jobs)
	s.Run(jobs[9000].Submit)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		f := s.Fork()
		if _, err := f.Submit(ctx, provisioner.SubmitRequest{Name: "probe", Account: "mirage", TimeLimit: 48 * time.Hour, Nodes: 8, GPUs: 24}); err != nil {
			b.Fatal(err)
		}
		f.Run(f.Now().Add(48 * time.Hour))
	}
}
