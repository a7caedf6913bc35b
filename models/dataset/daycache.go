package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/sim"
)

// A chain dataset is cached by injection day, so that a nightly retrain on
// a moving window (mirage train from cron on the site's sacct) probes only
// the days it has not seen. A day's file is reused while the trace's jobs
// it depended on are unchanged: its episodes depend only on the jobs
// submitted before its latest probed event (DependsOn) — later arrivals
// cannot change when a successor that had already started did — and the
// file records the digest of those jobs. A trace that grows by a night
// keeps the digest of every day whose successors had all started.

// SpecDigests answers the digest of a scenario's jobs submitted before an
// instant; build it once per scenario.
type SpecDigests struct {
	submits []time.Time // sorted
	digests []string    // digests[i]: the first i jobs in (submit, id) order
}

// NewSpecDigests digests sc's job specs in (submit, id) order.
func NewSpecDigests(sc *scenario.Scenario) (*SpecDigests, error) {
	specs := slices.Clone(sc.Specs)
	slices.SortStableFunc(specs, func(a, b sim.JobSpec) int {
		if c := a.Submit.Compare(b.Submit); c != 0 {
			return c
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	d := &SpecDigests{submits: make([]time.Time, len(specs)), digests: make([]string, len(specs)+1)}
	prev := sha256.Sum256(nil)
	d.digests[0] = hex.EncodeToString(prev[:])
	for i := range specs {
		b, err := json.Marshal(specs[i])
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		h.Write(prev[:])
		h.Write(b)
		copy(prev[:], h.Sum(nil))
		d.submits[i] = specs[i].Submit
		d.digests[i+1] = hex.EncodeToString(prev[:])
	}
	return d, nil
}

// Before is the digest of the jobs submitted strictly before t.
func (d *SpecDigests) Before(t time.Time) string {
	n := sort.Search(len(d.submits), func(i int) bool { return !d.submits[i].Before(t) })
	return d.digests[n]
}

// DayCache generates chain datasets through a directory of per-day files.
type DayCache struct {
	Dir string // cache directory (created 0700)
	Key string // everything else the episodes depend on: cluster, protocol, scale, seed (hashed into file names)
}

// DayStats says how a dataset was assembled.
type DayStats struct {
	Days, Cached int // injection days, and those read from the cache
}

// Generate returns the dataset of o's window on sc like GenerateChainData,
// reading the days it has cached and generating the others (one pass per
// run of consecutive missing days), then saving them. o.EndBy is
// applied to the assembled days, so a day cached on one night serves the
// next whatever its end of training.
func (c DayCache) Generate(ctx context.Context, sc *scenario.Scenario, o GenOptions) (*ChainData, DayStats, error) {
	p := o.Protocol.WithDefaults(sc.Config)
	points := p.Injections(sc, o.From, o.Until)
	if len(points) == 0 {
		_, err := GenerateChainData(ctx, sc, o) // its ErrNoInjections, with the window in the message
		return nil, DayStats{}, err
	}
	dig, err := NewSpecDigests(sc)
	if err != nil {
		return nil, DayStats{}, err
	}
	type day struct {
		first, last time.Time
		path        string
		data        *ChainData
	}
	var days []*day
	for _, t := range points {
		if n := len(days); n > 0 && sameDay(days[n-1].first, t) {
			days[n-1].last = t
			continue
		}
		days = append(days, &day{first: t, last: t})
	}
	st := DayStats{Days: len(days)}
	var missing [][2]int // runs of consecutive days to generate, [first, last]
	for i, d := range days {
		d.path = c.path(sc.Name, d.first, d.last)
		cd, err := LoadChainData(d.path)
		if err == nil && features.CheckSchema(cd.Schema, features.Schema()) == nil && cd.SpecsDigest == dig.Before(cd.DependsOn) {
			d.data = cd
			st.Cached++
			continue
		}
		// Missing, unreadable, refused (safefile: not ours) or stale: regenerated.
		if n := len(missing); n > 0 && missing[n-1][1] == i-1 {
			missing[n-1][1] = i
		} else {
			missing = append(missing, [2]int{i, i})
		}
	}
	out := &ChainData{Schema: features.Schema(), Trace: sc.Name, Protocol: p, From: o.From, Until: o.Until, Seed: sc.Config.Seed}
	if len(missing) > 0 {
		if err := os.MkdirAll(c.Dir, 0o700); err != nil {
			return nil, st, fmt.Errorf("dataset cache: %w", err)
		}
	}
	for _, run := range missing {
		g := o
		g.From, g.Until, g.EndBy = days[run[0]].first, days[run[1]].last.Add(time.Nanosecond), time.Time{}
		gen, err := GenerateChainData(ctx, sc, g)
		if err != nil {
			return nil, st, err
		}
		out.Probes += gen.Probes
		out.Seconds += gen.Seconds
		for _, d := range days[run[0] : run[1]+1] {
			cd := &ChainData{Schema: gen.Schema, Trace: gen.Trace, Protocol: gen.Protocol, From: d.first, Until: d.last.Add(time.Nanosecond), Seed: gen.Seed}
			for _, e := range gen.Episodes {
				if !e.Inject.Before(d.first) && !e.Inject.After(d.last) {
					cd.Episodes = append(cd.Episodes, e)
				}
			}
			cd.Skipped = len(injectionsIn(points, d.first, d.last))*len(p.Nodes) - len(cd.Episodes)
			cd.DependsOn = dependsOn(cd, p, d.last)
			cd.SpecsDigest = dig.Before(cd.DependsOn)
			if err := SaveChainData(d.path, cd); err != nil {
				return nil, st, err
			}
			d.data = cd
		}
	}
	for _, d := range days {
		out.Skipped += d.data.Skipped
		for _, e := range d.data.Episodes {
			if !o.EndBy.IsZero() && e.PredEnd.After(o.EndBy) {
				out.Dropped++
				continue
			}
			out.Episodes = append(out.Episodes, e)
		}
	}
	return out, st, nil
}

func (c DayCache) path(scenarioName string, first, last time.Time) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%d|%d|%d", c.Key, scenarioName, features.FeatureSchemaVersion, first.UnixNano(), last.UnixNano())
	return filepath.Join(c.Dir, "chainday-"+first.UTC().Format("20060102")+"-"+hex.EncodeToString(h.Sum(nil)[:8])+".gob.gz")
}

// sameDay: a and b fall on the same UTC day.
func sameDay(a, b time.Time) bool {
	return a.UTC().Truncate(24 * time.Hour).Equal(b.UTC().Truncate(24 * time.Hour))
}

func injectionsIn(points []time.Time, first, last time.Time) []time.Time {
	var out []time.Time
	for _, t := range points {
		if !t.Before(first) && !t.After(last) {
			out = append(out, t)
		}
	}
	return out
}

// dependsOn is the latest instant a day's episodes were simulated to: every
// probe's successor start (or censoring horizon), and the start deadline of
// an injection whose predecessor never started.
func dependsOn(d *ChainData, p scenario.Protocol, last time.Time) time.Time {
	bound := last.Add(time.Second)
	if d.Skipped > 0 {
		bound = last.Add(p.StartDeadline + time.Second)
	}
	for _, e := range d.Episodes {
		g := e.Reactive
		for _, x := range e.Gap {
			g = max(g, x)
		}
		if t := e.PredEnd.Add(time.Duration(g*float64(time.Second)) + time.Second); t.After(bound) {
			bound = t
		}
	}
	return bound
}

// DefaultCacheDir is where the per-day cache lives unless told otherwise:
// $XDG_CACHE_HOME/mirage/datasets (the user's cache directory), or "" (no
// cache) when there is none.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "mirage", "datasets")
}
