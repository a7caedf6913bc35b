package dataset_test

import (
	"context"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
)

// BenchmarkGenerateChainData generates one day of chains (4 injections × 2
// sizes × 25 probes) on all cores; probes/s is the dataset generation rate.
func BenchmarkGenerateChainData(b *testing.B) {
	sc := modeltest.Scenario(b)
	o := dataset.GenOptions{Protocol: modeltest.Protocol(), From: sc.First.Add(5 * 24 * time.Hour), Until: sc.First.Add(6 * 24 * time.Hour)}
	probes := 0
	for b.Loop() {
		d, err := dataset.GenerateChainData(context.Background(), sc, o)
		if err != nil {
			b.Fatal(err)
		}
		probes += d.Probes
	}
	b.ReportMetric(float64(probes)/b.Elapsed().Seconds(), "probes/s")
}
