package metrics

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// TraceRef identifies a trace file by path and content.
type TraceRef struct {
	Path   string `json:"path"`           // as given on the command line
	SHA256 string `json:"sha256"`         // hex digest of the file's bytes
	Jobs   int    `json:"jobs,omitempty"` // jobs read, if known
	// Skipped is the number of malformed rows left out (--skip-bad).
	Skipped int `json:"skipped,omitempty"`
}

// Window is a named span of trace time (evaluation window, warm-up, or a
// model's training and validation windows).
type Window struct {
	Name  string    `json:"name"`
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
}

// ModelRef records a trained model used by a policy: its directory and the
// content of its meta.json (kind, schema, trace, windows, seed, parameters,
// library versions), decoded generically so any version of the file is kept.
type ModelRef struct {
	Policy string         `json:"policy"`
	Dir    string         `json:"dir"`
	Meta   map[string]any `json:"meta,omitempty"`
}

// CellInfo describes one experiment cell as run (one array task of a
// sweep, or one unit of a single-process run).
type CellInfo struct {
	Name      string            `json:"name"`     // unique, e.g. "synth/xgb/x1.2/pair"
	Cell      string            `json:"cell"`     // Sample.Cell of its samples
	Trace     string            `json:"trace"`    // trace path
	Protocol  string            `json:"protocol"` // "pair" or "chain-K"
	LoadScale float64           `json:"load_scale"`
	Policies  []string          `json:"policies"`         // policies whose samples the cell produced (reference included)
	Seeds     map[string]uint64 `json:"seeds,omitempty"`  // seeds used (sim, load, ...)
	Params    map[string]string `json:"params,omitempty"` // protocol parameters (interval, warm-up, limit, nodes, ...)
}

// Provenance is what makes a report reproducible.
type Provenance struct {
	Mirage  string     `json:"mirage"`            // mirage version
	Command []string   `json:"command,omitempty"` // command line that produced the report
	Traces  []TraceRef `json:"traces"`
	Windows []Window   `json:"windows,omitempty"`
	Models  []ModelRef `json:"models,omitempty"`
	Cells   []CellInfo `json:"cells"`
}

// Summary is one line about the model: its kind, the trace and windows it
// was trained on and its seed (the rest of meta.json is in report.json).
// It is where the generic Meta is read, so that reports need not.
func (m ModelRef) Summary() string {
	var parts []string
	for _, k := range []string{"kind", "task", "trace", "seed", "schema"} {
		if v, ok := m.Meta[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		}
	}
	if w, ok := m.Meta["windows"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(w)) {
			parts = append(parts, fmt.Sprintf("%s %v", k, w[k]))
		}
	}
	if len(parts) == 0 {
		return "metadata in report.json"
	}
	return strings.Join(parts, "; ")
}
