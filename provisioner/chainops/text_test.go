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

// TestStatusListShowsTheSegmentThatRan (#51): the one-line view of a
// chain that ended shows the segment that ended it, not the successor
// submitted ahead and cancelled unstarted, and counts segments from 0 as
// mirage status CHAIN does; an active chain shows its latest segment.
func TestStatusListShowsTheSegmentThatRan(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	done := ChainView{Chain: provisioner.Chain{ID: "c-done", Name: "train", Policy: provisioner.PolicyPin, State: provisioner.ChainDone, Reason: "work done", Created: t0},
		Segments: []provisioner.Segment{
			{ChainID: "c-done", Index: 3, JobID: "60", State: provisioner.StateTimeout, Submit: t0, Start: t0, End: t0.Add(h)},
			{ChainID: "c-done", Index: 4, JobID: "61", State: provisioner.StateCompleted, Submit: t0, Start: t0.Add(h), End: t0.Add(90 * time.Minute)},
			{ChainID: "c-done", Index: 5, JobID: "62", State: provisioner.StateCancelled, Submit: t0.Add(h), End: t0.Add(90 * time.Minute)},
		}}
	active := ChainView{Chain: provisioner.Chain{ID: "c-on", Name: "svc", Policy: provisioner.PolicyPin, State: provisioner.ChainActive, Segments: 3, Created: t0},
		Segments: []provisioner.Segment{
			{ChainID: "c-on", Index: 0, JobID: "70", State: provisioner.StateRunning, Submit: t0, Start: t0},
			{ChainID: "c-on", Index: 1, JobID: "71", State: provisioner.StatePending, Submit: t0.Add(h)},
		}}
	var b strings.Builder
	if err := (ChainViews{done, active}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	// CHAIN NAME POLICY STATE SEG OF… JOB "JOB STATE" …: the fields after
	// STATE, with "until done" and "3 segments" two words each.
	if got := strings.Join(rows["c-done"][4:9], " "); got != "4 until done 61 COMPLETED" {
		t.Errorf("ended chain shows %q, want segment 4 (job 61, COMPLETED):\n%s", got, b.String())
	}
	if got := strings.Join(rows["c-on"][4:9], " "); got != "1 3 segments 71 PENDING" {
		t.Errorf("active chain shows %q, want its pending successor, segment 1 of 3:\n%s", got, b.String())
	}
}
