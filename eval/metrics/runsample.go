package metrics

import "time"

// RunSample is the outcome of one whole run (one chain of the run protocol
// under one policy). Durations are exact; Completion runs from the first
// segment's start (the first queue wait is the same for every policy) to
// the moment the work was done.
type RunSample struct {
	Policy     string        `json:"policy"`
	Cell       string        `json:"cell"`
	Protocol   string        `json:"protocol"`
	ChainID    string        `json:"chain"`
	Inject     time.Time     `json:"inject"`
	Nodes      int           `json:"nodes"`
	GPUs       int           `json:"gpus"`
	LoadScale  float64       `json:"load_scale"`
	LoadClass  string        `json:"load_class"`    // by reactive's mean gap on the same run
	Work       time.Duration `json:"work_ns"`       // W
	Completion time.Duration `json:"completion_ns"` // first start → work done (the cut-off when censored)
	Segments   int           `json:"segments"`      // segments that started
	HandOffs   int           `json:"handoffs"`      // segments ended early by their successor's hand-off
	Downtime   time.Duration `json:"downtime_ns"`   // time in [first start, done] with no segment running
	ChargedGPU float64       `json:"charged_gpu_h"` // Σ GPUs × run time of every segment, GPU-hours
	UsefulGPU  float64       `json:"useful_gpu_h"`  // GPUs × work done, GPU-hours
	Censored   bool          `json:"censored"`      // the work was not done at the cut-off
	// OthersQueued is what the replayed trace's jobs spent queued in the
	// run's first W after its injection (GPU-hours, sim.QueuedGPUHours):
	// against reactive's on the same run, what the policy cost other users.
	OthersQueued float64 `json:"others_queued_gpu_h"`
}

// Overhead is the completion time beyond the work itself.
func (r *RunSample) Overhead() time.Duration { return r.Completion - r.Work }

// Goodput is useful GPU-hours per GPU-hour charged (0 when nothing was charged).
func (r *RunSample) Goodput() float64 {
	if r.ChargedGPU <= 0 {
		return 0
	}
	return r.UsefulGPU / r.ChargedGPU
}

// RunKey matches the same run across policies.
type RunKey struct {
	cell, protocol string
	scale          float64
	chain          string
	nodes          int
}

// ClassifyRuns sets each run's load class from the reference (reactive)
// policy's hand-offs on the same run (same cell, protocol, load scale,
// chain and size): the class of their mean gap, with the thresholds of
// LoadClassOf. Runs without reactive hand-offs keep theirs.
func ClassifyRuns(runs []RunSample, samples []Sample) {
	sum := map[RunKey]time.Duration{}
	n := map[RunKey]int{}
	for i := range samples {
		if s := &samples[i]; s.Policy == Reference {
			k := RunKey{s.Cell, s.Protocol, s.LoadScale, s.ChainID, s.Nodes}
			sum[k] += s.Gap
			n[k]++
		}
	}
	for i := range runs {
		r := &runs[i]
		if k := (RunKey{r.Cell, r.Protocol, r.LoadScale, r.ChainID, r.Nodes}); n[k] > 0 {
			r.LoadClass = LoadClassOf(sum[k] / time.Duration(n[k]))
		}
	}
}

// ClassifyRunSamples sets the load class of the run protocol's hand-offs
// to their run's (ClassifyRuns): a policy's k-th hand-off is not at the
// moment of reactive's k-th, so the per-hand-off reference does not apply.
func ClassifyRunSamples(samples []Sample, runs []RunSample) {
	class := map[RunKey]string{}
	for i := range runs {
		if r := &runs[i]; r.LoadClass != "" {
			class[RunKeyOf(r)] = r.LoadClass
		}
	}
	for i := range samples {
		s := &samples[i]
		if s.Protocol != ProtocolRun {
			continue
		}
		if c, ok := class[RunKey{s.Cell, s.Protocol, s.LoadScale, s.ChainID, s.Nodes}]; ok {
			s.LoadClass = c
		}
	}
}

// ClassifyByReference sets each sample's load class from the reference
// (reactive) policy's gap on the same hand-off (same cell, protocol, load
// scale, chain, segment and size); samples without a reference keep theirs.
func ClassifyByReference(samples []Sample) {
	type key struct {
		h        HandoffKey
		protocol string
		scale    float64
	}
	ref := map[key]time.Duration{}
	for i := range samples {
		if s := &samples[i]; s.Policy == Reference {
			ref[key{HandoffOf(s), s.Protocol, s.LoadScale}] = s.Gap
		}
	}
	for i := range samples {
		s := &samples[i]
		if g, ok := ref[key{HandoffOf(s), s.Protocol, s.LoadScale}]; ok {
			samples[i].LoadClass = LoadClassOf(g)
		}
	}
}
