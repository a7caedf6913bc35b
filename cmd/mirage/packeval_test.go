package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/eval/pack"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

const packNodes = "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,4,A100\nn2,64000,262144,4,A100\n"

// Pods of 2, 2 and 4 GPUs arrive (8 GPUs: 100% of capacity) on 2 × 4 GPUs.
// spread: 2 → n1, 2 → n2, the 4-GPU pod fails with 4 of 8 arrived (50%) and
// 4 of 8 free (50%); fragmentation under the list's mix {2 GPUs ⅔, 4 GPUs ⅓}:
// each node (2 free) cannot fit 4 → ⅓·2 + ⅓·2 = 4/3 GPUs = 16.7%.
// best-fit: 2 → n1, 2 → n1, 4 → n2: nothing fails, 100% allocated.
const packPods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p1,4000,1024,2,1000,,LS,Running,10,100,10
p2,4000,1024,2,1000,,LS,Running,20,100,20
p3,4000,1024,4,1000,,LS,Running,30,100,30
`

func TestPackEvalTable(t *testing.T) {
	t.Parallel()
	o := &packEvalOptions{spec: pack.Spec{Nodes: writeFile(t, "nodes.csv", packNodes), Pods: []string{writeFile(t, "pods.csv", packPods)}, Mode: "fill", Until: 1, Points: 2}, policies: []string{"best-fit", "spread"}}
	var out bytes.Buffer
	if err := runPackEval(context.Background(), &out, o); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"— 2 nodes, 8 GPUs; mode fill until 100% of capacity has arrived; arrivals in trace order, the list cycled;",
		": 3 pods (3 with GPUs, 0 sharing a GPU, 0 with a GPU-type constraint)\n",
		"best-fit  0.00%         0            0.00%      -              -                \n",
		"spread    50.00%        1            16.67%     50.00%         50.00%           \n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// The default methodology: shuffled arrivals, one replay per seed and
// policy. Whatever the order, best-fit places all three pods here (each
// 2-GPU pod goes where the other is, the 4-GPU pod on the empty node, or
// the 4-GPU pod first and both 2-GPU pods on the other node), so every
// seed ends fully allocated; the list asks for exactly 100% of the
// capacity, so no pod is drawn beyond it under --inflate 1.
func TestPackEvalSeeds(t *testing.T) {
	t.Parallel()
	o := &packEvalOptions{spec: pack.Spec{Nodes: writeFile(t, "nodes.csv", packNodes), Pods: []string{writeFile(t, "pods.csv", packPods)}, Mode: "fill",
		Until: 1.3, Order: "shuffled", Seeds: 3, FirstSeed: 7, Inflate: 1, Points: 2}, policies: []string{"best-fit"}, json: true}
	var out bytes.Buffer
	if err := runPackEval(context.Background(), &out, o); err != nil {
		t.Fatal(err)
	}
	var rep pack.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	l := rep.Lists[0]
	if rep.Order != "shuffled" || len(rep.Seeds) != 3 || rep.Seeds[0] != 7 || rep.Seeds[2] != 9 || len(l.Results) != 3 || len(l.Summary) != 1 {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range l.Results {
		if r.Arrivals != 3 || r.Failed != 0 || r.Unalloc100 != 0 {
			t.Errorf("seed %d: %+v", r.Seed, r)
		}
	}
	if s := l.Summary[0]; s.Unalloc100.N != 3 || s.Unalloc100.Mean != 0 || s.Failed100.Mean != 0 || s.FirstFail.N != 0 {
		t.Errorf("summary %+v", s)
	}
}

func TestPackEvalJSONSharingAndTypes(t *testing.T) {
	t.Parallel()
	pods := `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
h1,1000,1024,1,500,,LS,Running,1,9,1
h2,1000,1024,1,500,V100|A100,LS,Running,2,9,2
c1,2000,1024,0,0,,BE,Running,3,9,3
`
	o := &packEvalOptions{spec: pack.Spec{Nodes: writeFile(t, "nodes.csv", packNodes), Pods: []string{writeFile(t, "pods.csv", pods)}, Mode: "replay", Until: 1, Points: 3}, policies: []string{"frag-aware"}, json: true}
	var out bytes.Buffer
	if err := runPackEval(context.Background(), &out, o); err != nil {
		t.Fatal(err)
	}
	var rep pack.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	l := rep.Lists[0]
	if rep.GPUs != 8 || l.Pods != 3 || l.GPUPods != 2 || l.Sharing != 2 || l.Typed != 1 || len(l.Results) != 1 {
		t.Fatalf("report %+v", rep)
	}
	// Two half GPUs on one device (frag-aware keeps whole GPUs free): 1 GPU of 8 allocated.
	if r := l.Results[0]; r.Policy != placement.FragAware || r.Placed != 3 || r.Failed != 0 || r.End.Allocated != 0.125 {
		t.Errorf("result %+v", r)
	}
}

func TestPackEvalBadInput(t *testing.T) {
	t.Parallel()
	code := func(err error) int {
		var ee *cmdutil.ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return -1
	}
	nodes, pods := writeFile(t, "nodes.csv", packNodes), writeFile(t, "pods.csv", packPods)
	for _, tc := range []struct {
		name string
		o    packEvalOptions
		code int
		want string
	}{
		{"policy", packEvalOptions{spec: pack.Spec{Nodes: nodes, Pods: []string{pods}, Mode: "fill", Until: 1, Points: 2}, policies: []string{"worst-fit"}}, cmdutil.ExitUsage, "unknown placement policy"},
		{"mode", packEvalOptions{spec: pack.Spec{Nodes: nodes, Pods: []string{pods}, Mode: "later", Until: 1, Points: 2}, policies: []string{"spread"}}, cmdutil.ExitUsage, "--mode"},
		{"missing nodes", packEvalOptions{spec: pack.Spec{Nodes: "/nonexistent.csv", Pods: []string{pods}, Mode: "fill", Until: 1, Points: 2}, policies: []string{"spread"}}, cmdutil.ExitBadInput, "no such file"},
		{"bad nodes", packEvalOptions{spec: pack.Spec{Nodes: writeFile(t, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,x,1,4,A\n"), Pods: []string{pods}, Mode: "fill", Until: 1, Points: 2}, policies: []string{"spread"}}, cmdutil.ExitBadInput, "cpu_milli"},
		{"no GPUs", packEvalOptions{spec: pack.Spec{Nodes: writeFile(t, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1,0,\n"), Pods: []string{pods}, Mode: "fill", Until: 1, Points: 2}, policies: []string{"spread"}}, cmdutil.ExitBadInput, "no GPUs"},
		{"bad pods", packEvalOptions{spec: pack.Spec{Nodes: nodes, Pods: []string{writeFile(t, "p.csv", strings.Replace(packPods, "p2,4000,1024,2", "p2,4000,1024,two", 1))}, Mode: "fill", Until: 1, Points: 2}, policies: []string{"spread"}}, cmdutil.ExitBadInput, "num_gpu"},
	} {
		err := runPackEval(context.Background(), &bytes.Buffer{}, &tc.o)
		if code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (code %d), want %d and %q", tc.name, err, code(err), tc.code, tc.want)
		}
	}
}

// --multi-gpu and the FGD baseline reach the spec; the baseline runs.
func TestPackEvalMultiGPUFlag(t *testing.T) {
	t.Parallel()
	var got *packEvalOptions
	cmd := newPackEvalCmd(&Factory{}, func(o *packEvalOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--nodes", "n.csv", "--pods", "p.csv", "--multi-gpu", "0.3", "--policies", "frag-aware,fgd"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.spec.MultiGPU != 0.3 || strings.Join(got.policies, ",") != "frag-aware,fgd" {
		t.Fatalf("options %+v", got)
	}
	o := &packEvalOptions{spec: pack.Spec{Nodes: writeFile(t, "nodes.csv", packNodes), Pods: []string{writeFile(t, "pods.csv", packPods)}, Mode: "fill", Until: 1, Points: 2,
		MultiGPU: 0.5}, policies: []string{"fgd"}}
	var out bytes.Buffer
	if err := runPackEval(context.Background(), &out, o); err != nil {
		t.Fatal(err)
	}
	// The list is all multi-GPU pods already (share 1): nothing re-drawn;
	// FGD places the 2-GPU pods together and the 4-GPU pod on the other node.
	for _, want := range []string{"3 with 2 or more GPUs: 100.0% of the GPU demand)", "fgd     0.00%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
