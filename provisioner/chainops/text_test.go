package chainops

import (
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// displayWords quotes exactly the words that are not plain.
func TestDisplayWords(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"/home/a/job.sbatch", "-p", "gpu", "--time=24:00:00"}, "/home/a/job.sbatch -p gpu --time=24:00:00"},
		{[]string{"/tmp/my job.sh", "--comment", "a\nb"}, `"/tmp/my job.sh" --comment "a\nb"`},
		{[]string{"", "x"}, "x"},
		{[]string{"s", ""}, `s ""`},
	} {
		if got := displayWords(c.in); got != c.want {
			t.Errorf("displayWords(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// A pending pinned successor shows its nodes in status; once it runs, or
// unpinned, it does not.
func TestStatusShowsPin(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	v := &ChainView{Chain: provisioner.Chain{ID: "c1", Name: "svc", Policy: provisioner.PolicyPin, State: provisioner.ChainActive, Created: t0},
		Segments: []provisioner.Segment{
			{ChainID: "c1", Index: 0, JobID: "10", State: provisioner.StateRunning, Submit: t0, Start: t0},
			{ChainID: "c1", Index: 1, JobID: "11", State: provisioner.StatePending, Submit: t0, Pinned: "gpu01,gpu02"},
		}}
	var b strings.Builder
	if err := v.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "pinned to gpu01,gpu02") {
		t.Errorf("status text lacks the pin:\n%s", b.String())
	}
	if j := v.JSON(); j.SegmentList[1].Pinned != "gpu01,gpu02" || j.SegmentList[0].Pinned != "" {
		t.Errorf("status JSON segments %+v", j.SegmentList)
	}
	v.Segments[1].State = provisioner.StateRunning
	b.Reset()
	_ = v.WriteText(&b)
	if strings.Contains(b.String(), "pinned") {
		t.Errorf("a running successor shown as pinned:\n%s", b.String())
	}
}

func TestSigned(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		time.Hour + 2*time.Minute + 3456789*time.Microsecond: "+1h2m3s",
		-(90*time.Second + 600*time.Millisecond):             "-1m31s",
		0:                                                    "+0s",
	} {
		if got := signed(d); got != want {
			t.Errorf("signed(%s) = %q, want %q", d, got, want)
		}
	}
}
