package main

import (
	"github.com/mirage-gpu/mirage/eval/report"
	"path/filepath"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models"
)

// TestFromMeansTheSameInTrainAndEval: "--from 2022-11-04" names one instant
// in mirage train and in mirage eval, midnight in the trace's own zone (the
// LS6-like synthetic trace is US Central, UTC−5 on that day, before the
// 6 November change to standard time).
func TestFromMeansTheSameInTrainAndEval(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t) // trained with --from 2022-11-04 --train-until 2022-11-08
	chi, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2022, 11, 4, 0, 0, 0, 0, chi)
	if want.UTC().Hour() != 5 {
		t.Fatalf("tzdata: midnight of 4 Nov 2022 in Chicago is %v", want.UTC())
	}
	meta, err := models.ReadMeta(filepath.Join(fx.dir, "xgb"))
	if err != nil {
		t.Fatal(err)
	}
	if !meta.Windows.TrainFrom.Equal(want) || !meta.Windows.TrainUntil.Equal(want.AddDate(0, 0, 4)) {
		t.Errorf("train --from 2022-11-04 --train-until 2022-11-08: windows %+v, want from %v", meta.Windows, want.UTC())
	}
	out := filepath.Join(t.TempDir(), "eval")
	_, stderr, code := runMirage(t, "eval", "--trace", fx.trace, "--policies", "reactive", "--nodes", "1",
		"--limit", "6h", "--every", "12h", "--from", "2022-11-04", "--until", "2022-11-05", "--out", out)
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	r, err := report.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Time
	for _, w := range r.Provenance.Windows {
		if w.Name == "eval" {
			got = append(got, w.From)
			if !w.Until.Equal(time.Date(2022, 11, 5, 0, 0, 0, 0, chi)) {
				t.Errorf("eval --until 2022-11-05: window ends %v", w.Until)
			}
		}
	}
	if len(got) != 1 || !got[0].Equal(want) {
		t.Errorf("eval --from 2022-11-04: window starts %v, want %v", got, want.UTC())
	}
	// An explicit offset is an instant wherever it is read.
	_, stderr, code = runMirage(t, "eval", "--trace", fx.trace, "--policies", "reactive", "--nodes", "1",
		"--limit", "6h", "--every", "12h", "--from", "2022-11-04T00:00:00Z", "--until", "2022-11-05T00:00:00Z", "--out", out+"-utc")
	if code != 0 {
		t.Fatalf("eval with offsets: exit %d: %s", code, stderr)
	}
	if r, err = report.ReadFile(filepath.Join(out+"-utc", "report.json")); err != nil {
		t.Fatal(err)
	}
	for _, w := range r.Provenance.Windows {
		if w.Name == "eval" && !w.From.Equal(time.Date(2022, 11, 4, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("eval --from 2022-11-04T00:00:00Z: window starts %v", w.From)
		}
	}
}
