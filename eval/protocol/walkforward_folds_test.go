package protocol

import (
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models/dataset"
)

// TestRetrainFolds: periods cut every `every`, each training only on
// chains whose every outcome was known at its start, worked by hand on
// five chains.
func TestRetrainFolds(t *testing.T) {
	t0 := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	ep := func(inject, predEnd float64, reactiveH float64, gapsH ...float64) dataset.ChainEpisode {
		e := dataset.ChainEpisode{Inject: h(inject), PredStart: h(inject), PredEnd: h(predEnd), Reactive: reactiveH * 3600}
		for _, g := range gapsH {
			e.Gap = append(e.Gap, g*3600)
			e.Censored = append(e.Censored, false)
		}
		return e
	}
	d := &dataset.ChainData{Episodes: []dataset.ChainEpisode{
		ep(0, 10, 1, -5, 0),   // known at 11
		ep(4, 14, 20, 3, -1),  // predecessor ends at 14, reactive successor starts at 34: known at 34
		ep(24, 34, 0, -2, -1), // known at 34
		ep(30, 40, 2, 5),      // a probe starting at 45: known at 45
		ep(50, 60, 0, -3),     // known at 60
	}}
	if got := d.Episodes[1].KnownBy(); !got.Equal(h(34)) {
		t.Fatalf("KnownBy %s, want %s", got, h(34))
	}
	bounds := []time.Time{h(24), h(48), h(72)}
	folds := RetrainFolds(d, bounds, 12*time.Hour)
	type want struct {
		period     int
		start, end float64
		train      int
		test       []float64 // injections
	}
	wants := []want{
		{0, 24, 36, 1, []float64{24, 30}}, // only chain 0 is known at 24 (chain 1's reactive successor still queues)
		{0, 36, 48, 3, nil},               // chains 0, 1, 2 known at 36
		{1, 48, 60, 4, []float64{50}},     // chain 3 known at 45
		{1, 60, 72, 5, nil},
	}
	if len(folds) != len(wants) {
		t.Fatalf("%d folds, want %d", len(folds), len(wants))
	}
	for i, w := range wants {
		f := folds[i]
		if f.Period != w.period || !f.Start.Equal(h(w.start)) || !f.End.Equal(h(w.end)) || len(f.Train) != w.train || len(f.Test) != len(w.test) {
			t.Errorf("fold %d: period %d [%s, %s) train %d test %d; want %+v", i, f.Period, f.Start, f.End, len(f.Train), len(f.Test), w)
			continue
		}
		for j, inj := range w.test {
			if !f.Test[j].Inject.Equal(h(inj)) {
				t.Errorf("fold %d test %d injected %s, want %s", i, j, f.Test[j].Inject, h(inj))
			}
		}
	}
	// One fold per period without a retrain cadence: Folds.
	if p := Folds(d, bounds); len(p) != 2 || len(p[0].Train) != 1 || len(p[1].Train) != 4 || len(p[0].Test) != 2 || len(p[1].Test) != 1 {
		t.Errorf("Folds: %d periods, %+v", len(p), p)
	}
	// Nightly refits stay at local midnight across the end of daylight
	// saving time (6 November 2022 in Chicago has 25 hours).
	chi, err := time.LoadLocation("America/Chicago")
	testenv.Require(t, err == nil, "the time zone America/Chicago", "install the tzdata package")
	nov6 := time.Date(2022, 11, 6, 0, 0, 0, 0, chi)
	if got, want := retrainAfter(nov6, 24*time.Hour), time.Date(2022, 11, 7, 0, 0, 0, 0, chi); !got.Equal(want) {
		t.Errorf("nightly refit after %s: %s, want %s", nov6, got, want)
	}
	if got := retrainAfter(nov6, 5*time.Hour); !got.Equal(nov6.Add(5 * time.Hour)) {
		t.Errorf("5-hour refit after %s: %s", nov6, got)
	}
}

func TestFoldsTrainBeforeScoring(t *testing.T) {
	t0 := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	var d dataset.ChainData
	for h := 0; h < 20*24; h += 12 {
		in := t0.Add(time.Duration(h) * time.Hour)
		d.Episodes = append(d.Episodes, dataset.ChainEpisode{Inject: in, PredStart: in.Add(time.Hour), PredEnd: in.Add(49 * time.Hour)})
	}
	bounds := []time.Time{t0.Add(10 * 24 * time.Hour), t0.Add(15 * 24 * time.Hour), t0.Add(20 * 24 * time.Hour)}
	fs := Folds(&d, bounds)
	if len(fs) != 2 {
		t.Fatalf("%d folds, want 2", len(fs))
	}
	// Fold 0: injections at 0, 12, …, 228 h scored from day 10 (240 h):
	// training chains end by 240 h, i.e. injected by 191 h: 0…180 h, 16 chains.
	// Scored: injected in [240, 360) h: 10 chains.
	if len(fs[0].Train) != 16 || len(fs[0].Test) != 10 {
		t.Errorf("fold 0: %d training, %d scored chains, want 16 and 10", len(fs[0].Train), len(fs[0].Test))
	}
	for i, f := range fs {
		for _, e := range f.Train {
			if e.PredEnd.After(f.Start) {
				t.Errorf("fold %d trains on a chain ending %s, after its start %s", i, e.PredEnd, f.Start)
			}
		}
	}
}
