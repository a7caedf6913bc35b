package dataset_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
)

// TestDayCacheNightly: the per-day cache gives exactly the dataset of a
// direct generation; a window one day longer (the next night) probes only
// the new day; a trace changed after a day's last probed event keeps that
// day, a change before it regenerates it; EndBy applies to cached days.
func TestDayCacheNightly(t *testing.T) {
	sc := modeltest.Scenario(t)
	p := modeltest.Protocol()
	day := 24 * time.Hour
	from := sc.First.Add(3 * day).UTC().Truncate(day)
	c := dataset.DayCache{Dir: t.TempDir(), Key: "test"}
	ctx := context.Background()
	night1 := dataset.GenOptions{Protocol: p, From: from, Until: from.Add(2 * day), Workers: 2}
	direct, err := dataset.GenerateChainData(ctx, sc, night1)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := c.Generate(ctx, sc, night1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Days != 2 || st.Cached != 0 || !reflect.DeepEqual(got.Episodes, direct.Episodes) || got.Probes != direct.Probes {
		t.Fatalf("first night: %+v, %d episodes/%d probes; direct %d/%d", st, len(got.Episodes), got.Probes, len(direct.Episodes), direct.Probes)
	}

	// The next night: one more day; only it is probed.
	night2 := night1
	night2.Until = from.Add(3 * day)
	newDay, err := dataset.GenerateChainData(ctx, sc, dataset.GenOptions{Protocol: p, From: from.Add(2 * day), Until: from.Add(3 * day), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	direct2, err := dataset.GenerateChainData(ctx, sc, night2)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err = c.Generate(ctx, sc, night2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Days != 3 || st.Cached != 2 || got.Probes != newDay.Probes || !reflect.DeepEqual(got.Episodes, direct2.Episodes) {
		t.Errorf("second night: %+v, %d probes (new day alone: %d), episodes equal %v", st, got.Probes, newDay.Probes, reflect.DeepEqual(got.Episodes, direct2.Episodes))
	}

	// A window that moved by a day at both ends: the new day only.
	night3 := night1
	night3.From, night3.Until = from.Add(day), from.Add(4*day)
	lastDay, err := dataset.GenerateChainData(ctx, sc, dataset.GenOptions{Protocol: p, From: from.Add(3 * day), Until: from.Add(4 * day), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, st, err = c.Generate(ctx, sc, night3); err != nil || st.Days != 3 || st.Cached != 2 || got.Probes != lastDay.Probes {
		t.Errorf("moved window: %+v, %d probes (the new day alone: %d), %v", st, got.Probes, lastDay.Probes, err)
	}

	// EndBy on cached days equals a direct generation with it.
	endBy := night2
	endBy.EndBy = from.Add(2 * day)
	directEnd, err := dataset.GenerateChainData(ctx, sc, endBy)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err = c.Generate(ctx, sc, endBy)
	if err != nil {
		t.Fatal(err)
	}
	if st.Cached != 3 || !reflect.DeepEqual(got.Episodes, directEnd.Episodes) || got.Dropped != directEnd.Dropped {
		t.Errorf("EndBy: %+v, %d episodes (%d dropped), direct %d (%d dropped)", st, len(got.Episodes), got.Dropped, len(directEnd.Episodes), directEnd.Dropped)
	}

	// A job changed long after every probed event keeps the cached days;
	// one changed before the first day regenerates them all.
	late := *sc
	late.Specs = slices.Clone(sc.Specs)
	li := len(late.Specs) - 1
	late.Specs[li].Submit = late.Specs[li].Submit.Add(time.Minute)
	if _, st, err = c.Generate(ctx, &late, night1); err != nil || st.Cached != 2 {
		t.Errorf("a job changed at the trace's end (%s): %+v, %v; want both days cached", late.Specs[li].Submit, st, err)
	}
	early := *sc
	early.Specs = slices.Clone(sc.Specs)
	early.Specs[0].Runtime += time.Minute
	if _, st, err = c.Generate(ctx, &early, night1); err != nil || st.Cached != 0 {
		t.Errorf("a job changed before the window: %+v, %v; want nothing cached", st, err)
	}
}
