package train

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// benchObservation is an observation of a running 4-node chain in the synthetic scenario.
func benchObservation(b *testing.B) *provisioner.Observation {
	sc := modeltest.Scenario(b)
	p := modeltest.Protocol().WithDefaults(sc.Config)
	base, err := sc.NewSim()
	if err != nil {
		b.Fatal(err)
	}
	at := sc.First.Add(8 * 24 * time.Hour)
	base.Run(at)
	c, err := scenario.StartChain(base, p, at, 4, "bench")
	if err != nil {
		b.Fatal(err)
	}
	obs, err := c.Observe(c.TickTime(6))
	if err != nil {
		b.Fatal(err)
	}
	return obs
}

// BenchmarkDecide is one decision of each policy on a busy-cluster
// observation (features from the snapshot and 24 h of history, then the
// model): the per-decision latency of the daemon. Learned models report
// their file size and live heap.
func BenchmarkDecide(b *testing.B) {
	obs := benchObservation(b)
	ms := testPolicies(b)
	names := make([]string, 0, len(ms))
	for n := range ms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			pol, err := models.NewModelPolicy(name, ms[name])
			if err != nil {
				b.Fatal(err)
			}
			mem := modeltest.ModelMemory(b, ms[name])
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pol.Decide(obs); err != nil {
					b.Fatal(err)
				}
			}
			mem()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
		})
	}
	for _, pol := range []provisioner.Policy{&models.AveragePolicy{}, &models.QuantilePolicy{}} {
		b.Run(pol.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pol.Decide(obs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
		})
	}
}

// BenchmarkPredict is the model alone on one feature vector (Decide minus the features).
func BenchmarkPredict(b *testing.B) {
	x, err := features.Features(benchObservation(b))
	if err != nil {
		b.Fatal(err)
	}
	ms := testPolicies(b)
	names := make([]string, 0, len(ms))
	for n := range ms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ms[name].Predict(x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
		})
	}
}

// BenchmarkFeaturesSim computes the features of the busy-cluster observation.
func BenchmarkFeaturesSim(b *testing.B) {
	obs := benchObservation(b)
	dst := make([]float64, 0, features.NumFeatures())
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = features.AppendFeatures(dst[:0], obs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrainPolicy trains each learned policy on the synthetic chains
// (60 training chains, 1,440 rows; RL budgets as in the tests).
func BenchmarkTrainPolicy(b *testing.B) {
	train, _ := testSplit(b)
	for _, name := range []string{"xgb", "rf-xgb", "rf-golearn", "dqn", "pg"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				o := PolicyTrainOptions{Seed: 7, RL: RLOptions{Steps: 20000, Iterations: 150, Hidden: []int{32, 32}, Evals: 10}}
				if _, err := TrainPolicy(name, train, nil, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecideLS6 is one decision of each learned policy in
// MIRAGE_MODELS on the shared LS6 trace's state of 2023-02-10 12:00 UTC
// (a running 8-node chain; skipped without the trace or the variable).
//
//	MIRAGE_MODELS=DIR go test -tags "libsqlite3 xgboost" -run '^$' -bench DecideLS6 ./models/train/
func BenchmarkDecideLS6(b *testing.B) {
	dir := os.Getenv("MIRAGE_MODELS")
	if dir == "" {
		b.Skip("set MIRAGE_MODELS to a models directory") // opt-in, never in CI: measures models trained elsewhere
	}
	_, jobs := ls6Jobs(b)
	sc, err := scenario.NewScenario("ls6", jobs, sim.LS6())
	if err != nil {
		b.Fatal(err)
	}
	base, err := sc.NewSim()
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2023, 2, 10, 12, 0, 0, 0, time.UTC)
	base.Run(at)
	c, err := scenario.StartChain(base, scenario.DefaultProtocol().WithDefaults(sc.Config), at, 8, "bench")
	if err != nil {
		b.Fatal(err)
	}
	obs, err := c.Observe(c.TickTime(60))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("features", func(b *testing.B) {
		dst := make([]float64, 0, features.NumFeatures())
		b.ReportAllocs()
		for b.Loop() {
			if dst, err = features.AppendFeatures(dst[:0], obs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(obs.Snapshot.Pending())), "pending")
		b.ReportMetric(float64(len(obs.History)), "history")
		b.ReportMetric(float64(len(obs.Snapshot.Jobs)), "jobs")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
	})
	for _, name := range models.LearnedPolicies() {
		m, err := models.LoadPolicyModel(dir, name)
		if err != nil {
			continue
		}
		pol, err := models.NewModelPolicy(name, m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			mem := modeltest.ModelMemory(b, m)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pol.Decide(obs); err != nil {
					b.Fatal(err)
				}
			}
			mem()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
		})
	}
}

// BenchmarkNightlyRetrain is the nightly retrain of the default learned
// policy (models.DefaultLearned) on the last 90 days of the shared LS6
// trace, as a cron job runs it (`mirage train --model xgb --from NIGHT-90d
// --until NIGHT --cache DIR`): first-night starts from an empty dataset
// cache; next-night is the night after, with the cache the first night
// left (only the new day is probed). Skipped without the trace.
func BenchmarkNightlyRetrain(b *testing.B) {
	_, jobs := ls6Jobs(b)
	chi, err := time.LoadLocation("America/Chicago")
	if err != nil {
		b.Fatal(err)
	}
	night := time.Date(2023, 2, 1, 0, 0, 0, 0, chi)
	retrain := func(b *testing.B, night time.Time, cache string) {
		spec := Spec{Jobs: jobs, TraceName: "ls6-a100-until-2023-03-01.log.gz", Cluster: sim.LS6(), Models: []string{models.DefaultLearned},
			Out: b.TempDir(), From: night.AddDate(0, 0, -90), Until: night, Seed: 1, WaitReplicas: 1, Cache: cache}
		if _, err := Run(context.Background(), spec); err != nil {
			b.Fatal(err)
		}
	}
	parent := b.TempDir() // outlives the sub-benchmarks: the first night's cache serves the next
	var cache string
	b.Run("first-night", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			var err error
			if cache, err = os.MkdirTemp(parent, "night1-"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			retrain(b, night, cache)
		}
	})
	b.Run("next-night", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			dir := b.TempDir()
			if err := os.CopyFS(dir, os.DirFS(cache)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			retrain(b, night.AddDate(0, 0, 1), dir)
		}
	})
}
