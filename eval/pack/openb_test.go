package pack

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner/placement"
)

const packNodesCSV = "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,4,A100\nn2,64000,262144,4,A100\n"

// Pods of 2, 2 and 4 GPUs on 2 × 4 GPUs (see TestPackEvalFill): spread
// fails the 4-GPU pod with half the capacity unallocated, best-fit places all.
const packPodsCSV = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p1,4000,1024,2,1000,,LS,Running,10,100,10
p2,4000,1024,2,1000,,LS,Running,20,100,20
p3,4000,1024,4,1000,,LS,Running,30,100,30
`

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// progress records the labels it was started with.
type progress struct{ labels []string }

func (p *progress) Start(label string) { p.labels = append(p.labels, label) }
func (p *progress) Update(int, int)    {}
func (p *progress) Done()              {}

func TestRunPack(t *testing.T) {
	pr := &progress{}
	spec := Spec{Nodes: writeTemp(t, "nodes.csv", packNodesCSV), Pods: []string{writeTemp(t, "openb_pod_list_x.csv", packPodsCSV)},
		Policies: []placement.Policy{placement.BestFit, placement.Spread}, Mode: Fill, Until: 1, Points: 4, Progress: pr}
	rep, err := Evaluate(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.GPUs != 8 || rep.NodeN != 2 || len(rep.Lists) != 1 || len(rep.Lists[0].Results) != 2 ||
		strings.Join(pr.labels, ";") != "openb_pod_list_x.csv" {
		t.Fatalf("report %+v, progress %v", rep, pr.labels)
	}
	var text, md bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	// Hand-worked (see TestPackEvalFill): best-fit places all 8 GPUs, so at
	// 100% arrival nothing is free; spread fails the 4-GPU pod with 4 of 8
	// GPUs free (50%), 4/3 GPUs fragmented under the list's mix (16.67%),
	// the first failure at 50% arrived with 50% unallocated.
	for _, want := range []string{
		"— 2 nodes, 8 GPUs; mode fill until 100% of capacity has arrived; arrivals in trace order, the list cycled; frag-aware's mix: the pod list's\n",
		"best-fit  0.00%         0            0.00%      -              -                \n",
		"spread    50.00%        1            16.67%     50.00%         50.00%           \n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := rep.WriteMarkdown(&md, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| pod list | best-fit | spread |\n|---|---|---|\n",
		"| x | **0.00%** | 50.00% |\n",
		"| x | **0** | 1 |\n",
		"| x | **none** | 50.0% / 50.0% |\n",
		"| x | **8.3 / 0.0 / 0.0 / 0.0 %** | 8.3 / 16.7 / 16.7 / 16.7 % |\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestRunPackBadInput(t *testing.T) {
	pods := writeTemp(t, "pods.csv", packPodsCSV)
	for _, tc := range []struct {
		name, nodes, want string
	}{
		{"missing", "/nonexistent.csv", "no such file"},
		{"malformed", writeTemp(t, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,x,1,4,A\n"), "cpu_milli"},
		{"no GPUs", writeTemp(t, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1,0,\n"), "no GPUs"},
	} {
		_, err := Evaluate(context.Background(), Spec{Nodes: tc.nodes, Pods: []string{pods}, Policies: []placement.Policy{placement.Spread},
			Mode: Fill, Until: 1, Points: 2})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ErrInput.Error()) {
			t.Errorf("%s: %v, want ErrInput with the cause's message (%q)", tc.name, err, tc.want)
		}
	}
}
