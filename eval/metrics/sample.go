package metrics

import (
	"strconv"
	"strings"
	"time"
)

// Sample is the outcome of one hand-off between two segments of a chain
// under one policy: the signed gap = successor start − predecessor end
// (positive: interruption; negative: overlap, GPU time spent twice).
type Sample struct {
	Policy    string        `json:"policy"`     // policy name
	Cell      string        `json:"cell"`       // experiment cell id (trace, load, protocol), for merging job-array outputs
	Protocol  string        `json:"protocol"`   // "pair" (published: one predecessor, one successor) or "chain-K"
	ChainID   string        `json:"chain"`      // chain id inside the cell
	Segment   int           `json:"segment"`    // index of the successor (1 for the pair protocol)
	Inject    time.Time     `json:"inject"`     // trace time the chain was injected
	Nodes     int           `json:"nodes"`      // nodes per segment
	GPUs      int           `json:"gpus"`       // GPUs per segment (overlap cost)
	LoadScale float64       `json:"load_scale"` // arrival scaling of the cell (1 = the trace as recorded)
	LoadClass string        `json:"load_class"` // "low" (reactive gap ≤ 2 h), "medium" (2–12 h), "heavy" (> 12 h)
	Gap       time.Duration `json:"gap_ns"`     // successor start − predecessor end
	Submits   int           `json:"submits"`    // sbatch calls the policy made for this hand-off
	Censored  bool          `json:"censored"`   // the successor had not started when the run ended (Gap is a lower bound)
}

// Load classes by the reactive baseline's gap (the published protocol).
const (
	LoadLow    = "low"    // reactive gap ≤ 2 h
	LoadMedium = "medium" // 2 h < reactive gap ≤ 12 h
	LoadHeavy  = "heavy"  // reactive gap > 12 h
)

// LoadClassOf classifies a hand-off by the gap the reactive policy got.
func LoadClassOf(reactiveGap time.Duration) string {
	switch {
	case reactiveGap <= 2*time.Hour:
		return LoadLow
	case reactiveGap <= 12*time.Hour:
		return LoadMedium
	}
	return LoadHeavy
}

// ProtocolPair names the published pair protocol in Sample.Protocol.
const ProtocolPair = "pair"

// ProtocolRun names the whole-run protocol in Sample.Protocol and RunSample.Protocol.
const ProtocolRun = "run"

// ChainProtocol names the K-segment protocol: "chain-K".
func ChainProtocol(k int) string { return "chain-" + strconv.Itoa(k) }

// ParseChainProtocol reads "chain-K" (K ≥ 2) and returns K.
func ParseChainProtocol(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "chain-")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(rest)
	if err != nil || k < 2 || k > 1000 {
		return 0, false
	}
	return k, true
}
