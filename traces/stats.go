package traces

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"time"
)

// Stats summarises a trace: what `mirage traces stats` prints.
type Stats struct {
	Jobs         int           `json:"jobs"`
	Skipped      int           `json:"skipped_malformed_rows"`
	FirstSubmit  time.Time     `json:"first_submit"`
	LastSubmit   time.Time     `json:"last_submit"`
	FirstStart   time.Time     `json:"first_start"`
	LastEnd      time.Time     `json:"last_end"`
	Nodes        []Bucket      `json:"nodes"`   // node-count distribution (1, 2, 3, 4, 5–8, 9–16, 17–32, 33–64, >64)
	GPUs         []Bucket      `json:"gpus"`    // GPU-count distribution (0, 1, 2, 3–4, 5–8, >8)
	Runtime      Percentiles   `json:"runtime"` // End − Start over jobs with both
	Wait         Percentiles   `json:"wait"`    // Start − Submit over jobs with both
	WithLimit    int           `json:"jobs_with_limit"`
	HitLimit     int           `json:"jobs_hit_limit"` // runtime ≥ time limit
	HitShare     float64       `json:"hit_limit_share"`
	PeakNodes    int           `json:"peak_nodes"`
	PeakNodesAt  time.Time     `json:"peak_nodes_at"`
	PeakGPUs     int           `json:"peak_gpus"`
	PeakGPUsAt   time.Time     `json:"peak_gpus_at"`
	NodeSeconds  float64       `json:"node_seconds"`
	GPUSeconds   float64       `json:"gpu_seconds"`
	MedianLimit  time.Duration `json:"-"`
	MedianLimitS float64       `json:"median_limit_s"`
}

// Bucket is one bar of a count distribution.
type Bucket struct {
	Label string  `json:"label"`
	Min   int     `json:"min"`
	Max   int     `json:"max"` // inclusive; -1 for the open last bucket
	Count int     `json:"count"`
	Share float64 `json:"share"` // of all jobs
}

// Percentiles of a duration distribution in seconds (linear interpolation
// between order statistics, as numpy's default).
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_s"`
	P90 float64 `json:"p90_s"`
	P99 float64 `json:"p99_s"`
	Max float64 `json:"max_s"`
}

var (
	nodeBounds = [][2]int{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 8}, {9, 16}, {17, 32}, {33, 64}, {65, math.MaxInt}}
	gpuBounds  = [][2]int{{0, 0}, {1, 1}, {2, 2}, {3, 4}, {5, 8}, {9, math.MaxInt}}
)

// StatsBuilder accumulates Stats one job at a time. Memory is a few bytes per
// job (durations for the percentiles and start/end events for the peak
// sweep), never the jobs themselves.
type StatsBuilder struct {
	s        Stats
	nodes    []int
	gpus     []int
	runtimes []float64
	waits    []float64
	limits   []float64
	events   []event
}

type event struct {
	t     int64 // Unix seconds
	nodes int32 // signed: + at start, − at end
	gpus  int32
}

// NewStatsBuilder returns an empty builder.
func NewStatsBuilder() *StatsBuilder {
	return &StatsBuilder{nodes: make([]int, len(nodeBounds)), gpus: make([]int, len(gpuBounds))}
}

func bucketOf(bounds [][2]int, v int) int {
	for i, b := range bounds {
		if v >= b[0] && v <= b[1] {
			return i
		}
	}
	return -1
}

// Add counts one job.
func (b *StatsBuilder) Add(j *Job) {
	s := &b.s
	s.Jobs++
	if !j.Submit.IsZero() {
		if s.FirstSubmit.IsZero() || j.Submit.Before(s.FirstSubmit) {
			s.FirstSubmit = j.Submit
		}
		if j.Submit.After(s.LastSubmit) {
			s.LastSubmit = j.Submit
		}
	}
	if !j.Start.IsZero() && (s.FirstStart.IsZero() || j.Start.Before(s.FirstStart)) {
		s.FirstStart = j.Start
	}
	if j.End.After(s.LastEnd) {
		s.LastEnd = j.End
	}
	if i := bucketOf(nodeBounds, j.Nodes); i >= 0 {
		b.nodes[i]++
	}
	if i := bucketOf(gpuBounds, j.GPUs); i >= 0 {
		b.gpus[i]++
	}
	if !j.Start.IsZero() && !j.End.IsZero() {
		rt := j.End.Sub(j.Start)
		b.runtimes = append(b.runtimes, rt.Seconds())
		s.NodeSeconds += rt.Seconds() * float64(j.Nodes)
		s.GPUSeconds += rt.Seconds() * float64(j.GPUs)
		if rt > 0 {
			b.events = append(b.events,
				event{j.Start.Unix(), int32(j.Nodes), int32(j.GPUs)},
				event{j.End.Unix(), -int32(j.Nodes), -int32(j.GPUs)})
		}
		if j.TimeLimit > 0 {
			s.WithLimit++
			if rt >= j.TimeLimit {
				s.HitLimit++
			}
		}
	}
	if j.TimeLimit > 0 {
		b.limits = append(b.limits, j.TimeLimit.Seconds())
	}
	if !j.Start.IsZero() && !j.Submit.IsZero() {
		b.waits = append(b.waits, j.Start.Sub(j.Submit).Seconds())
	}
}

// percentile of sorted xs at p in [0,1], linear interpolation.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := p * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (xs[hi]-xs[lo])*(pos-float64(lo))
}

func percentiles(xs []float64) Percentiles {
	sort.Float64s(xs)
	p := Percentiles{N: len(xs)}
	if len(xs) == 0 {
		return p
	}
	p.P50, p.P90, p.P99, p.Max = percentile(xs, .5), percentile(xs, .9), percentile(xs, .99), xs[len(xs)-1]
	return p
}

// Stats finishes the summary (it sorts internal buffers; Add may continue).
func (b *StatsBuilder) Stats() Stats {
	s := b.s
	mk := func(bounds [][2]int, counts []int) []Bucket {
		out := make([]Bucket, len(bounds))
		for i, bd := range bounds {
			out[i] = Bucket{Label: bucketLabel(bd), Min: bd[0], Max: bd[1], Count: counts[i]}
			if bd[1] == math.MaxInt {
				out[i].Max = -1
			}
			if s.Jobs > 0 {
				out[i].Share = float64(counts[i]) / float64(s.Jobs)
			}
		}
		return out
	}
	s.Nodes = mk(nodeBounds, b.nodes)
	s.GPUs = mk(gpuBounds, b.gpus)
	s.Runtime = percentiles(b.runtimes)
	s.Wait = percentiles(b.waits)
	if s.WithLimit > 0 {
		s.HitShare = float64(s.HitLimit) / float64(s.WithLimit)
	}
	slices.Sort(b.limits)
	s.MedianLimitS = percentile(b.limits, .5)
	s.MedianLimit = time.Duration(s.MedianLimitS * float64(time.Second))
	// Sweep: at equal times ends (negative) come before starts, so a job
	// starting as another ends does not count both.
	slices.SortFunc(b.events, func(x, y event) int {
		if c := cmp.Compare(x.t, y.t); c != 0 {
			return c
		}
		return cmp.Compare(x.nodes, y.nodes)
	})
	var nodes, gpus int
	for _, e := range b.events {
		nodes += int(e.nodes)
		gpus += int(e.gpus)
		if nodes > s.PeakNodes {
			s.PeakNodes, s.PeakNodesAt = nodes, time.Unix(e.t, 0).UTC()
		}
		if gpus > s.PeakGPUs {
			s.PeakGPUs, s.PeakGPUsAt = gpus, time.Unix(e.t, 0).UTC()
		}
	}
	return s
}

func bucketLabel(b [2]int) string {
	switch {
	case b[1] == math.MaxInt:
		return ">" + itoa(b[0]-1)
	case b[0] == b[1]:
		return itoa(b[0])
	}
	return itoa(b[0]) + "-" + itoa(b[1])
}

// ComputeStats reads r to the end and summarises it. A read error (a
// malformed row without SkipBad) is returned as is.
func ComputeStats(r Reader) (Stats, error) {
	b := NewStatsBuilder()
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Stats{}, err
		}
		b.Add(&j)
	}
	s := b.Stats()
	s.Skipped = r.Skipped()
	return s, nil
}

// StatsFiles summarises files read together as one trace. The rows each
// file skipped (with SkipBad) are reported to warn (ReportSkipped) and
// counted in Skipped. A read error is returned as is.
func StatsFiles(files []string, opts Options, warn io.Writer) (Stats, error) {
	b := NewStatsBuilder()
	skipped := 0
	for _, file := range files {
		r, err := Open(file, opts)
		if err != nil {
			return Stats{}, err
		}
		for j, err := range All(r) {
			if err != nil {
				r.Close()
				return Stats{}, err
			}
			b.Add(&j)
		}
		ReportSkipped(warn, file, r)
		skipped += r.Skipped()
		r.Close()
	}
	s := b.Stats()
	s.Skipped = skipped
	return s, nil
}

// ReportSkipped prints how many malformed rows r skipped and the first
// errors, if it skipped any.
func ReportSkipped(w io.Writer, file string, r Reader) {
	if r.Skipped() == 0 {
		return
	}
	fmt.Fprintf(w, "%s: skipped %d malformed rows\n", file, r.Skipped())
	for _, e := range r.Errors() {
		fmt.Fprintf(w, "  %v\n", e)
	}
}

// WriteText prints s for humans, ending with the count of skipped rows.
func (s *Stats) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("jobs: %d\n", s.Jobs)
	if s.Jobs == 0 {
		return s.writeSkipped(ew)
	}
	tf := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	ew.printf("submits: %s .. %s (%.1f days)\n", tf(s.FirstSubmit), tf(s.LastSubmit), s.LastSubmit.Sub(s.FirstSubmit).Hours()/24)
	ew.printf("starts from %s, last end %s\n", tf(s.FirstStart), tf(s.LastEnd))
	dist := func(name string, bs []Bucket) {
		ew.printf("%s:", name)
		for _, b := range bs {
			if b.Count > 0 {
				ew.printf(" %s %.2f%% (%d)", b.Label, 100*b.Share, b.Count)
			}
		}
		ew.printf("\n")
	}
	dist("nodes", s.Nodes)
	dist("gpus", s.GPUs)
	pc := func(name string, p Percentiles) {
		ew.printf("%s p50/p90/p99/max: %.0f / %.0f / %.0f / %.0f s (n=%d)\n", name, p.P50, p.P90, p.P99, p.Max, p.N)
	}
	pc("runtime", s.Runtime)
	pc("queue wait", s.Wait)
	if s.WithLimit > 0 {
		ew.printf("time limit: median %.0f min; hit limit: %d of %d jobs (%.2f%%)\n", s.MedianLimitS/60, s.HitLimit, s.WithLimit, 100*s.HitShare)
	} else {
		ew.printf("time limit: not recorded\n")
	}
	ew.printf("peak concurrent: %d nodes (at %s), %d GPUs (at %s)\n", s.PeakNodes, tf(s.PeakNodesAt), s.PeakGPUs, tf(s.PeakGPUsAt))
	ew.printf("node-hours: %.0f, GPU-hours: %.0f\n", s.NodeSeconds/3600, s.GPUSeconds/3600)
	return s.writeSkipped(ew)
}

// writeSkipped ends the text with the count of skipped malformed rows, if any.
func (s *Stats) writeSkipped(ew *errWriter) error {
	if s.Skipped > 0 {
		ew.printf("skipped %d malformed rows\n", s.Skipped)
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// Span is the time the jobs cover: the first submission and the last end.
func Span(jobs []Job) (first, last time.Time) {
	for _, j := range jobs {
		if first.IsZero() || j.Submit.Before(first) {
			first = j.Submit
		}
		if j.End.After(last) {
			last = j.End
		}
	}
	return first, last
}
