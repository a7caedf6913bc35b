package chainops

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestGaps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	segs := []provisioner.Segment{
		{Index: 0, State: provisioner.StateTimeout, Start: at(0), End: at(55)},
		{Index: 1, Attempt: 0, State: provisioner.StateFailed, Start: at(60), End: at(61)}, // retried: not the final attempt
		{Index: 1, Attempt: 1, State: provisioner.StateTimeout, Start: at(50), End: at(120)},
		{Index: 2, State: provisioner.StateRunning, Start: at(125)},
		{Index: 3, State: provisioner.StatePending},
	}
	got := Gaps(segs)
	// index 1's final attempt starts 5 min before index 0 ends (overlap);
	// index 2 starts 5 min after index 1's final attempt ends; index 3 has not started.
	if len(got) != 2 || got[2] != -5*time.Minute || got[3] != 5*time.Minute {
		t.Errorf("gaps %v", got)
	}
	v := &ChainView{Segments: segs, Gaps: got}
	if g, ok := v.LastGap(); !ok || g != 5*time.Minute {
		t.Errorf("last gap %v %v", g, ok)
	}
	if in, ov := v.Totals(); in != 5*time.Minute || ov != 5*time.Minute {
		t.Errorf("totals %v %v", in, ov)
	}
	if _, ok := provisioner.Gap(provisioner.Segment{State: provisioner.StateRunning, End: at(1)}, provisioner.Segment{Start: at(2)}); ok {
		t.Error("gap after a predecessor that has not finished")
	}
}
