package pack

import (
	"context"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// BenchmarkPackEval is `mirage pack-eval` on one openb list with the
// default methodology: 4 policies × 10 seeds on 2 workers (the issue's
// budget: under 30 s on 2 cores), the default list as it is and with a
// quarter of its GPU pods type-constrained (ConstrainTypes). It needs the
// shared traces (testenv.SharedTrace).
func BenchmarkPackEval(b *testing.B) {
	nodes := testenv.SharedTrace(b, "alibaba-pai-openb-2023/openb_node_list_gpu_node.csv")
	pods := []string{testenv.SharedTrace(b, "alibaba-pai-openb-2023/openb_pod_list_default.csv")}
	for _, bc := range []struct {
		name  string
		types float64
	}{{"default", 0}, {"default+types25", DefaultTypeShare}} {
		b.Run(bc.name, func(b *testing.B) {
			spec := packingSpec(nodes, pods, bc.types)
			spec.Workers = 2
			for b.Loop() {
				if _, err := Evaluate(context.Background(), spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
