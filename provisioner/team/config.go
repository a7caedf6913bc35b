package team

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// Errors of the team rules.
var (
	ErrConfig              = errors.New("invalid team rules")             // the configuration file is malformed or inconsistent
	ErrUnknownTeam         = errors.New("unknown team")                   // a submission names a team the rules do not know
	ErrQuotaExceedsCluster = errors.New("team quotas exceed the cluster") // nominal GPUs add up to more than the cluster has
)

// Duration is a time.Duration written as a Go duration string ("30s", "2h")
// in the team rules file.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"30s\" or \"2h\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\" or \"2h\", got %q", s)
	}
	*d = Duration(v)
	return nil
}

// Config is the team rules file (YAML or JSON; see ParseConfig):
//
//	teams:                      # one entry per team (Slurm account / Kubernetes team)
//	  - name: team-a
//	    gpus: 20                # nominal GPUs: the quota
//	    gpuTypes: {A100: 12}    # optional: nominal GPUs per GPU type (types not listed: 0)
//	    borrowLimit: 10         # optional: at most this many GPUs held as borrowed work
//	    minRuntime: 30m         # optional: overrides borrowing.minRuntime for this team's borrowed work
//	    backoff: 10m            # optional: overrides borrowing.backoff for this team
//	  - name: team-b
//	    gpus: 20
//	overcommit: false           # allow quotas that add up to more than the cluster
//	borrowing:
//	  enabled: true             # over-quota work may use idle GPUs as borrowed work
//	  qos: preemptible          # QOS of borrowed submissions (Slurm preempts it; Kubernetes: borrowed label)
//	  markers: [mirage-borrowed] # other QOS / priority-class names that mark borrowed work
//	  grace: 60s                # grace between the checkpoint signal and the eviction
//	  signal: USR1              # checkpoint signal
//	  minRuntime: 0s            # borrowed work runs at least this long before it may be reclaimed
//	  backoff: 0s               # after a team's borrowed work is reclaimed, it borrows again only this long after
//	placement:
//	  policy: frag-aware        # first-fit, best-fit, spread or frag-aware
//	  hints: auto               # Slurm --nodelist/--exclude hints: auto, always or never
//	  historyWindow: 168h       # jobs this recent shape the job-size mix
//	  priorJobs: 20             # weight of the default mix, in pseudo-jobs
type Config struct {
	Teams      []Quota         `json:"teams"`
	Overcommit bool            `json:"overcommit,omitempty"`
	Borrowing  BorrowingConfig `json:"borrowing"`
	Placement  PlacementConfig `json:"placement"`
}

// Quota is one team's nominal GPUs.
type Quota struct {
	Name        string         `json:"name"`                  // team name (Slurm account, Kubernetes team label or namespace mapping)
	GPUs        int            `json:"gpus"`                  // nominal GPUs in total
	GPUTypes    map[string]int `json:"gpuTypes,omitempty"`    // nominal GPUs per GPU type; when set, other types have none
	BorrowLimit *int           `json:"borrowLimit,omitempty"` // most GPUs the team may hold as borrowed work (nil = no limit)
	// Namespaces are the Kubernetes namespaces whose pods are the team's.
	// This mapping is the admin's (the rules file): once any team lists
	// namespaces, a pod's team is its namespace's alone, and the team label
	// its owner sets is ignored (a pod in an unlisted namespace has no team).
	Namespaces []string `json:"namespaces,omitempty"`
	// MinRuntime and Backoff override borrowing.minRuntime and
	// borrowing.backoff for this team's borrowed work (nil: the defaults).
	MinRuntime *Duration `json:"minRuntime,omitempty"`
	Backoff    *Duration `json:"backoff,omitempty"`
}

// Free is what is left of the quota when the team's own (not borrowed) work
// holds used GPUs; never negative.
func (q *Quota) Free(used int) int { return max(q.GPUs-used, 0) }

// BorrowingConfig says how idle quota is lent and reclaimed.
type BorrowingConfig struct {
	Enabled *bool    `json:"enabled,omitempty"` // default true
	QOS     string   `json:"qos,omitempty"`     // default "preemptible"
	Markers []string `json:"markers,omitempty"` // default ["mirage-borrowed"] (the Kubernetes adapter's priority class)
	Grace   Duration `json:"grace,omitempty"`   // default 60s
	Signal  string   `json:"signal,omitempty"`  // default "USR1"
	// MinRuntime is how long borrowed work runs before it may be
	// reclaimed (default 0: at once). A request that only younger borrowed
	// work could make room for waits (Kubernetes) until the first of it
	// comes of age.
	MinRuntime Duration `json:"minRuntime,omitempty"`
	// Backoff is how long a team whose borrowed work was reclaimed does not
	// borrow again (default 0), so that work is not admitted and reclaimed
	// in a loop. Its work within quota is not held back.
	Backoff Duration `json:"backoff,omitempty"`
}

// PlacementConfig chooses the packing policy and how it is applied.
type PlacementConfig struct {
	Policy        placement.Policy `json:"policy,omitempty"`        // default frag-aware
	Hints         HintMode         `json:"hints,omitempty"`         // default auto
	HistoryWindow Duration         `json:"historyWindow,omitempty"` // default 168h
	PriorJobs     float64          `json:"priorJobs,omitempty"`     // default 20
}

// HintMode says when the rules put packing hints (NodeList/Exclude) on a
// submission to a backend that places jobs itself (Slurm).
type HintMode string

// Hint modes.
const (
	HintsAuto   HintMode = "auto"   // only where the policy's node differs from the backend's own first fit
	HintsAlways HintMode = "always" // always pin the chosen nodes
	HintsNever  HintMode = "never"  // never
)

// Defaults of the team rules file.
const (
	DefaultBorrowedQOS    = "preemptible"
	DefaultBorrowedMarker = "mirage-borrowed"
	DefaultGrace          = 60 * time.Second
	DefaultSignal         = "USR1"
	DefaultMixWindow      = 7 * 24 * time.Hour
	// maxExcludeHint is the longest exclusion list used as a hint; beyond it
	// the chosen nodes are pinned with a node list instead.
	maxExcludeHint = 8
)

// ParseConfig reads a team rules file (YAML or JSON; unknown fields are
// errors, to catch typos), fills in defaults and validates what can be
// checked without a cluster. name is used in error messages.
func ParseConfig(data []byte, name string) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
	}
	if err := c.normalize(); err != nil {
		return c, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
	}
	return c, nil
}

// normalize fills defaults and checks the file on its own.
func (c *Config) normalize() error {
	if len(c.Teams) == 0 {
		return errors.New("no teams: list at least one under \"teams\"")
	}
	seen := map[string]bool{}
	nsTeam := map[string]string{}
	for i, t := range c.Teams {
		where := fmt.Sprintf("teams[%d]", i)
		if t.Name == "" {
			return fmt.Errorf("%s: name is empty", where)
		}
		where += " (" + t.Name + ")"
		if seen[t.Name] {
			return fmt.Errorf("%s: team listed twice", where)
		}
		seen[t.Name] = true
		if t.GPUs < 0 {
			return fmt.Errorf("%s: gpus %d: must be ≥ 0", where, t.GPUs)
		}
		for typ, n := range t.GPUTypes {
			if typ == "" {
				return fmt.Errorf("%s: gpuTypes: empty type name", where)
			}
			if n < 0 || n > t.GPUs {
				return fmt.Errorf("%s: gpuTypes %s: %d: must be between 0 and the team's gpus (%d)", where, typ, n, t.GPUs)
			}
		}
		if t.BorrowLimit != nil && *t.BorrowLimit < 0 {
			return fmt.Errorf("%s: borrowLimit %d: must be ≥ 0", where, *t.BorrowLimit)
		}
		if t.MinRuntime != nil && *t.MinRuntime < 0 || t.Backoff != nil && *t.Backoff < 0 {
			return fmt.Errorf("%s: minRuntime and backoff must be ≥ 0", where)
		}
		for _, ns := range t.Namespaces {
			switch other, dup := nsTeam[ns]; {
			case ns == "":
				return fmt.Errorf("%s: namespaces: empty name", where)
			case dup:
				return fmt.Errorf("%s: namespace %s is also team %s's: a namespace belongs to one team", where, ns, other)
			}
			nsTeam[ns] = t.Name
		}
	}
	if len(nsTeam) > 0 {
		for _, t := range c.Teams {
			if len(t.Namespaces) == 0 {
				return fmt.Errorf("team %s lists no namespaces while others do: once namespaces decide teams, a team without one would own none of its pods (list its namespaces too)", t.Name)
			}
		}
	}
	b := &c.Borrowing
	if b.Enabled == nil {
		yes := true
		b.Enabled = &yes
	}
	if b.QOS == "" {
		b.QOS = DefaultBorrowedQOS
	}
	if b.Markers == nil {
		b.Markers = []string{DefaultBorrowedMarker}
	}
	if b.Grace < 0 {
		return fmt.Errorf("borrowing.grace %s: must be ≥ 0", time.Duration(b.Grace))
	}
	if b.Grace == 0 {
		b.Grace = Duration(DefaultGrace)
	}
	if b.Signal == "" {
		b.Signal = DefaultSignal
	}
	if b.MinRuntime < 0 || b.Backoff < 0 {
		return fmt.Errorf("borrowing.minRuntime %s, borrowing.backoff %s: must be ≥ 0", time.Duration(b.MinRuntime), time.Duration(b.Backoff))
	}
	p := &c.Placement
	if p.Policy == "" {
		p.Policy = placement.FragAware
	}
	if _, err := placement.ParsePolicy(string(p.Policy)); err != nil {
		return fmt.Errorf("placement.policy: %v", err)
	}
	switch p.Hints {
	case "":
		p.Hints = HintsAuto
	case HintsAuto, HintsAlways, HintsNever:
	default:
		return fmt.Errorf("placement.hints %q: want auto, always or never", p.Hints)
	}
	if p.HistoryWindow < 0 || p.PriorJobs < 0 {
		return errors.New("placement: historyWindow and priorJobs must be ≥ 0")
	}
	if p.HistoryWindow == 0 {
		p.HistoryWindow = Duration(DefaultMixWindow)
	}
	if p.PriorJobs == 0 {
		p.PriorJobs = 20
	}
	return nil
}

// Team returns a team's quota, or nil.
func (c *Config) Team(name string) *Quota {
	for i := range c.Teams {
		if c.Teams[i].Name == name {
			return &c.Teams[i]
		}
	}
	return nil
}

// MinRuntime is how long a team's borrowed work runs before it may be
// reclaimed: the team's minRuntime, else borrowing.minRuntime (an unknown
// team has the default).
func (c *Config) MinRuntime(team string) time.Duration {
	if q := c.Team(team); q != nil && q.MinRuntime != nil {
		return time.Duration(*q.MinRuntime)
	}
	return time.Duration(c.Borrowing.MinRuntime)
}

// Backoff is how long a team whose borrowed work was reclaimed does not
// borrow again: the team's backoff, else borrowing.backoff.
func (c *Config) Backoff(team string) time.Duration {
	if q := c.Team(team); q != nil && q.Backoff != nil {
		return time.Duration(*q.Backoff)
	}
	return time.Duration(c.Borrowing.Backoff)
}

// NamespaceTeams maps each namespace a team lists to that team (nil when
// no team lists one).
func (c *Config) NamespaceTeams() map[string]string {
	var m map[string]string
	for _, t := range c.Teams {
		for _, ns := range t.Namespaces {
			if m == nil {
				m = map[string]string{}
			}
			m[ns] = t.Name
		}
	}
	return m
}

// TeamNames lists the teams, sorted.
func (c *Config) TeamNames() []string {
	out := make([]string, len(c.Teams))
	for i, t := range c.Teams {
		out[i] = t.Name
	}
	sort.Strings(out)
	return out
}

// CheckCluster validates the quotas against a cluster: the nominal GPUs of
// all teams must not add up to more than the GPUs of all its nodes (nor, per
// GPU type, to more than it has of that type) unless overcommit is set; a
// GPU type named in a quota must exist in the cluster.
func (c *Config) CheckCluster(snap *provisioner.Snapshot) error {
	capacity, byType := 0, map[string]int{}
	for i := range snap.Nodes {
		capacity += snap.Nodes[i].GPUs
		byType[snap.Nodes[i].GPUType] += snap.Nodes[i].GPUs
	}
	sum, sumType := 0, map[string]int{}
	parts := make([]string, 0, len(c.Teams))
	for _, t := range c.Teams {
		sum += t.GPUs
		parts = append(parts, fmt.Sprintf("%s %d", t.Name, t.GPUs))
		for typ, n := range t.GPUTypes {
			if _, ok := byType[typ]; !ok {
				return fmt.Errorf("%w: team %s: gpuTypes names %q, but the cluster has no GPUs of that type (types: %s)",
					ErrConfig, t.Name, typ, strings.Join(typeNames(byType), ", "))
			}
			sumType[typ] += n
		}
	}
	if c.Overcommit {
		return nil
	}
	if sum > capacity {
		return fmt.Errorf("%w: quotas add up to %d GPUs (%s) but the cluster has %d; lower them or set overcommit: true",
			ErrQuotaExceedsCluster, sum, strings.Join(parts, " + "), capacity)
	}
	for _, typ := range typeNames(sumType) {
		if sumType[typ] > byType[typ] {
			return fmt.Errorf("%w: quotas for GPU type %s add up to %d but the cluster has %d of them; lower them or set overcommit: true",
				ErrQuotaExceedsCluster, typ, sumType[typ], byType[typ])
		}
	}
	return nil
}

func typeNames(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		if t == "" {
			t = "(untyped)"
		}
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
