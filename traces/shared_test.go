package traces

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// ls6Path returns the shared LS6 trace (testenv.SharedTrace: skipped
// without it outside CI).
func ls6Path(t testing.TB) string {
	t.Helper()
	return testenv.SharedTrace(t, testenv.LS6)
}

func TestSharedLS6(t *testing.T) {
	jobs, r := readAll(t, ls6Path(t), Options{})
	if r.Format() != FormatLS6 || r.Skipped() != 0 {
		t.Fatalf("format %q skipped %d", r.Format(), r.Skipped())
	}
	if len(jobs) != 17975 {
		t.Fatalf("%d jobs, want 17,975 (README)", len(jobs))
	}
	users := map[string]bool{}
	for _, j := range jobs {
		users[j.User] = true
		if j.GPUs != 3*j.Nodes {
			t.Fatalf("job %s: %d GPUs for %d nodes", j.ID, j.GPUs, j.Nodes)
		}
	}
	// README: first row is job 478729 submitted 2022-10-05T11:52:48 US Central.
	if jobs[0].ID != "478729" || jobs[0].Submit.In(centralTime).Format("2006-01-02T15:04:05") != "2022-10-05T11:52:48" {
		t.Errorf("first job %+v", jobs[0])
	}
	// README: "Submits run 2022-10-05 to 2023-02-28".
	last := jobs[0].Submit
	for _, j := range jobs {
		if j.Submit.After(last) {
			last = j.Submit
		}
	}
	if got := last.In(centralTime).Format("2006-01-02"); got != "2023-02-28" {
		t.Errorf("last submit %s, want 2023-02-28", got)
	}
	if len(users) > 367 {
		t.Errorf("%d users; the full file has 367", len(users))
	}
}

func TestSharedLS6Stats(t *testing.T) {
	r, err := Open(ls6Path(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := ComputeStats(r)
	if err != nil {
		t.Fatal(err)
	}
	// README (full file): 1 node 79.54%, runtime p99 172,823 s, at most 80
	// nodes busy at once, 15.65% hit their limit; the cut differs slightly.
	if s.Jobs != 17975 || s.PeakNodes != 80 || s.PeakGPUs != 240 || s.Runtime.P99 != 172823 ||
		s.Nodes[0].Share < 0.78 || s.Nodes[0].Share > 0.82 || s.HitShare < 0.15 || s.HitShare > 0.17 {
		t.Errorf("LS6 stats %+v", s)
	}
}

func TestSharedSWF(t *testing.T) {
	p := testenv.SharedTrace(t, "pwa-swf/NASA-iPSC-1993-3.1-cln.swf.gz")
	r, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Format() != FormatSWF {
		t.Fatalf("sniffed %q", r.Format())
	}
	s, err := ComputeStats(r)
	if err != nil {
		t.Fatal(err)
	}
	// README: 18,239 jobs, runtime p50 86 s, 1 processor 27.1%; no waits
	// (so every wait is 0), no requested times.
	if s.Jobs != 18239 || s.Runtime.P50 != 86 || s.Nodes[0].Share < 0.266 || s.Nodes[0].Share > 0.276 || s.Wait.Max != 0 || s.WithLimit != 0 {
		t.Errorf("SWF stats %+v", s)
	}
	// UnixStartTime 749458803 anchors the first job (submit 0).
	if !s.FirstSubmit.Equal(time.Unix(749458803, 0)) {
		t.Errorf("first submit %v", s.FirstSubmit)
	}
}

func TestSharedOpenB(t *testing.T) {
	jobs, r := readAll(t, testenv.SharedTrace(t, "alibaba-pai-openb-2023/openb_pod_list_default.csv"), Options{})
	if r.Format() != FormatOpenB {
		t.Fatalf("sniffed %q", r.Format())
	}
	// README: 8,152 pods; 7,064 use GPUs; 897 Pending (never scheduled).
	gpu, pending := 0, 0
	for _, j := range jobs {
		if j.GPUs > 0 {
			gpu++
		}
		if j.Start.IsZero() {
			pending++
		}
	}
	if len(jobs) != 8152 || gpu != 7064 || pending != 897 {
		t.Errorf("%d pods, %d GPU pods, %d unscheduled; want 8152, 7064, 897", len(jobs), gpu, pending)
	}
	nodes, err := ReadNodes(testenv.SharedTrace(t, "alibaba-pai-openb-2023/openb_node_list_gpu_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	gpus := 0
	for _, n := range nodes {
		gpus += n.GPUs
	}
	// README: 1,213 GPU nodes, 6,212 GPUs.
	if len(nodes) != 1213 || gpus != 6212 {
		t.Errorf("%d nodes, %d GPUs; want 1213, 6212", len(nodes), gpus)
	}
}
