package models

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// SiteRanking ranks the candidates for a chain's default policy per site
// class (sim.SiteClass: what a successor queued early gains under the
// site's priority settings). It is measured by the evaluation's site grid
// on the period before the months it scores and written, with the rule
// that ordered it, to site_ranking.json by the test that runs the grid
// (eval's TestSiteGridLS6), never by hand; the file is compiled in.
type SiteRanking struct {
	Measured string                    `json:"measured"` // on what: trace, period, protocol
	Rule     string                    `json:"rule"`     // how the candidates were ordered
	Classes  map[string][]RankedPolicy `json:"classes"`  // site class → candidates, best first
}

// RankedPolicy is one candidate's place in a class's ranking.
type RankedPolicy struct {
	Policy     string   `json:"policy"`
	N          int      `json:"n"`                         // hand-offs it was ranked on
	MeanAbsGap float64  `json:"mean_abs_gap_h"`            // pooled mean |gap| (hours)
	VsReactive float64  `json:"vs_reactive"`               // Σ|gap| / reactive's on the same hand-offs
	LowVs      *float64 `json:"low_vs_reactive,omitempty"` // the same in the low class (nil: no low-load hand-off)
	Why        string   `json:"why"`                       // its place, in words
}

//go:embed site_ranking.json
var siteRankingJSON []byte

// LoadSiteRanking is the ranking compiled in.
func LoadSiteRanking() (*SiteRanking, error) { return ParseSiteRanking(siteRankingJSON) }

// ParseSiteRanking reads a ranking file: every ranked policy must be one
// the registry knows.
func ParseSiteRanking(b []byte) (*SiteRanking, error) {
	var r SiteRanking
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("site ranking: %w", err)
	}
	for class, ps := range r.Classes {
		for _, p := range ps {
			if !knownPolicy(p.Policy) {
				return nil, fmt.Errorf("site ranking: class %s: %w %q", class, ErrUnknownPolicy, p.Policy)
			}
		}
	}
	return &r, nil
}

// knownPolicy reports whether the registry resolves name.
func knownPolicy(name string) bool {
	switch {
	case ParseRef(name).UsesModel(), name == PolicyAverage, name == PolicyQuantile:
		return true
	}
	for _, b := range ProvisionerBaselines {
		if b == name {
			return true
		}
	}
	return false
}

// Choose is the first policy of class's ranking that policies can build
// (a learned one needs its model trained), with why in words; ok is false
// when the ranking has no such class or none of its policies can be
// built. warn says why a ranked policy whose model exists cannot be used.
func (r *SiteRanking) Choose(class string, policies provisioner.PolicyFactory) (name, why string, ok bool, warn error) {
	ranked := r.Classes[class]
	if len(ranked) == 0 {
		return "", "", false, nil
	}
	names := make([]string, len(ranked))
	for i, p := range ranked {
		names[i] = p.Policy
	}
	name, warn = firstBuildable(policies, names, "")
	if name == "" {
		return "", "", false, warn
	}
	var skipped []string
	for _, p := range ranked {
		if p.Policy == name {
			why = fmt.Sprintf("site class %s: %s", class, p.Why)
			break
		}
		skipped = append(skipped, p.Policy)
	}
	if len(skipped) > 0 {
		why += fmt.Sprintf(" (ranked above it but not trained here: %s)", strings.Join(skipped, ", "))
	}
	return name, why, true, warn
}
