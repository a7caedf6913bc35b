package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// What a site's settings mean for a chain's successor queued early: the
// one place that says it in words (Explain), names the kind of site they
// make (Classify) and lists the grid of site settings the evaluation scores
// every default policy under (SiteGrid). A successor queued early gains,
// over one submitted at its predecessor's end, only what the scheduler
// gives a pending job for having waited: its place in submission order
// (priority/basic, and ties under priority/multifactor), age priority
// (PriorityWeightAge, up to PriorityMaxAge, unless an accrual limit stops
// it ageing) and a backfill reservation on the nodes it is pinned to
// (within bf_window).

// SiteClass is the kind of priority setting a site has, by what a
// successor queued early gains there. Each names a cell of SiteGrid; the
// default policy is ranked per class (models.SiteRanking).
type SiteClass string

// The site classes, in the order Classify tests them.
const (
	SiteFIFO        SiteClass = "fifo"         // priority/basic: submission order is priority
	SiteAccrueCap   SiteClass = "accrue-cap"   // multifactor with MaxJobsAccrue ≤ 2 per user
	SiteNoAge       SiteClass = "age0"         // multifactor, PriorityWeightAge 0
	SiteFairshare   SiteClass = "fairshare"    // fair-share weight above the age weight
	SiteShortWindow SiteClass = "bf-window-1d" // bf_window shorter than the longest partition limit
	SiteAge1d       SiteClass = "age-1d"       // age-weighted, PriorityMaxAge ≤ 2 days
	SiteAge7d       SiteClass = "age-7d"       // age-weighted, PriorityMaxAge between (the hand-made ls6 preset)
	SiteAge14d      SiteClass = "age-14d"      // age-weighted, PriorityMaxAge ≥ 10 days
)

// accrueCapClass is the largest MaxJobsAccrue that makes a site SiteAccrueCap
// (NERSC's MaxJobsAccruePerUser=2, and the grid's 1).
const accrueCapClass = 2

// Classify names c's site class and says why, in words.
func Classify(c Config) (SiteClass, string) {
	switch {
	case c.PriorityType != PriorityMultifactor:
		return SiteFIFO, "PriorityType " + PriorityBasic + ": jobs start in submission order"
	case c.MaxJobsAccrue > 0 && c.MaxJobsAccrue <= accrueCapClass && !c.PriorityAccrueAlways && c.PriorityWeightAge > 0:
		return SiteAccrueCap, fmt.Sprintf("MaxJobsAccrue %d per user: only your %d oldest pending jobs age", c.MaxJobsAccrue, c.MaxJobsAccrue)
	case c.PriorityWeightAge == 0:
		return SiteNoAge, "PriorityWeightAge 0: waiting earns no priority"
	case c.PriorityWeightFairshare > c.PriorityWeightAge:
		return SiteFairshare, fmt.Sprintf("PriorityWeightFairshare %g above PriorityWeightAge %g: usage, not waiting, sets the order", c.PriorityWeightFairshare, c.PriorityWeightAge)
	case c.Backfill && c.BFWindow > 0 && c.BFWindow < longestLimit(c):
		return SiteShortWindow, fmt.Sprintf("bf_window %s below the longest limit %s: no reservation for a start further ahead", days(c.BFWindow), days(longestLimit(c)))
	case c.PriorityMaxAge <= 2*24*time.Hour:
		return SiteAge1d, fmt.Sprintf("age-weighted (PriorityWeightAge %g), full after PriorityMaxAge %s", c.PriorityWeightAge, days(c.PriorityMaxAge))
	case c.PriorityMaxAge >= 10*24*time.Hour:
		return SiteAge14d, fmt.Sprintf("age-weighted (PriorityWeightAge %g), full after PriorityMaxAge %s", c.PriorityWeightAge, days(c.PriorityMaxAge))
	}
	return SiteAge7d, fmt.Sprintf("age-weighted (PriorityWeightAge %g), full after PriorityMaxAge %s", c.PriorityWeightAge, days(c.PriorityMaxAge))
}

// longestLimit is the longest partition MaxTime (0: none set).
func longestLimit(c Config) time.Duration {
	var m time.Duration
	for _, p := range c.Partitions {
		m = max(m, p.MaxTime)
	}
	return m
}

// days prints a duration in days and hours where it is one.
func days(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// Finding is one setting and what it means for a chain.
type Finding struct {
	Setting string `json:"setting"` // Slurm's name
	Value   string `json:"value"`
	Meaning string `json:"meaning"` // for a successor queued early, in words
}

// SiteFacts are what a live site's accounting adds to its Config, read
// by `mirage site` from slurmdbd (sacctmgr).
type SiteFacts struct {
	AccountingErr string // why the QOS and associations could not be read ("": they were)
	AccrueFrom    string // where Config.MaxJobsAccrue comes from (an association or a QOS)
	// LimitsNotEnforced: slurmctld enforces no association or QOS limit
	// (AccountingStorageEnforce without limits), so accrual limits set in
	// slurmdbd change nothing.
	LimitsNotEnforced bool
	GrpJobsAccrue     map[string]int // account → its GrpJobsAccrue, where set
	NoReserve         []string       // QOS with the NoReserve flag
}

// Explain says what c's settings (and facts, a live site's accounting)
// mean for a chain whose successor is queued before its predecessor ends
// (pinned to its nodes by the pin policies), setting by setting. window is
// the head start considered (a segment's limit; 0: the longest partition
// limit).
func Explain(c Config, window time.Duration, facts SiteFacts) []Finding {
	if window <= 0 {
		window = longestLimit(c)
	}
	var out []Finding
	add := func(setting, value, format string, args ...any) {
		out = append(out, Finding{Setting: setting, Value: value, Meaning: fmt.Sprintf(format, args...)})
	}
	if c.PriorityType != PriorityMultifactor {
		add("PriorityType", c.PriorityType, "first submitted, first served: a successor queued early is ahead of every job submitted after it; "+
			"pin queues it on its predecessor's nodes, where it starts as they free unless an older job needs them")
	} else {
		explainWeights(c, window, add)
	}
	if !c.Backfill {
		add("SchedulerType", "sched/builtin", "no backfill: jobs start in priority order only, and a pinned successor holds back no job for its nodes beyond the main pass")
	} else {
		if lim := longestLimit(c); c.BFWindow < lim {
			add("SchedulerParameters", "bf_window="+days(c.BFWindow), "backfill plans only %s ahead, less than the %s limit: a successor queued earlier than that before its "+
				"predecessor's end gets no reservation on its nodes, and other jobs may take them until then", days(c.BFWindow), days(lim))
		} else {
			add("SchedulerParameters", "bf_window="+days(c.BFWindow), "backfill plans %s ahead: a pinned successor gets a reservation on its predecessor's nodes once it is the first to need them", days(c.BFWindow))
		}
		if c.BFMaxJobUser > 0 {
			add("SchedulerParameters", fmt.Sprintf("bf_max_job_user=%d", c.BFMaxJobUser), "backfill plans at most %d of your jobs per pass: with more pending, a successor may get no reservation", c.BFMaxJobUser)
		}
		if c.BFMinAgeReserve > 0 {
			add("SchedulerParameters", "bf_min_age_reserve="+days(c.BFMinAgeReserve), "a job pending less than %s gets no reservation: a successor queued later than that before its predecessor's end holds no nodes", c.BFMinAgeReserve)
		}
	}
	return append(out, explainFacts(c, facts)...)
}

// explainFacts says what a live site's accounting means for chains.
func explainFacts(c Config, f SiteFacts) []Finding {
	var out []Finding
	add := func(setting, value, format string, args ...any) {
		out = append(out, Finding{Setting: setting, Value: value, Meaning: fmt.Sprintf(format, args...)})
	}
	if f.AccountingErr != "" {
		add("sacctmgr", "unread", "QOS and association limits could not be read (%s): accrual limits, if any, are not known or modelled", f.AccountingErr)
	}
	if f.LimitsNotEnforced {
		add("AccountingStorageEnforce", "without limits", "slurmctld enforces no association or QOS limit: accrual limits set in slurmdbd change nothing")
	}
	if f.AccrueFrom != "" && c.MaxJobsAccrue > 0 {
		add("MaxJobsAccrue", fmt.Sprint(c.MaxJobsAccrue), "set by %s", f.AccrueFrom)
	}
	for _, acct := range slices.Sorted(maps.Keys(f.GrpJobsAccrue)) {
		add("GrpJobsAccrue", fmt.Sprintf("%d (account %s)", f.GrpJobsAccrue[acct], acct),
			"at most %d pending jobs of account %s accrue age at once, all its users together: a successor may gain no age while others of the account wait (not modelled)", f.GrpJobsAccrue[acct], acct)
	}
	for _, q := range f.NoReserve {
		add("QOS "+q, "NoReserve", "jobs of QOS %s get no backfill reservation: a successor in it holds no nodes ahead of its start", q)
	}
	return out
}

// explainWeights says what the multifactor weights mean for a successor
// queued window ahead.
func explainWeights(c Config, window time.Duration, add func(setting, value, format string, args ...any)) {
	switch {
	case c.PriorityWeightAge == 0:
		add("PriorityWeightAge", "0", "a successor queued early gains no priority here; pin only wins ties with jobs of equal priority submitted after it, "+
			"and holds its predecessor's nodes only while no job of higher priority waits for them")
	default:
		gain := c.PriorityWeightAge
		if c.PriorityMaxAge > 0 {
			gain = c.PriorityWeightAge * min(1, window.Hours()/c.PriorityMaxAge.Hours())
		}
		add("PriorityWeightAge", fmt.Sprintf("%g (PriorityMaxAge %s)", c.PriorityWeightAge, days(c.PriorityMaxAge)),
			"a successor queued %s early gains up to %.0f priority points over one submitted at its predecessor's end (the age factor is full after %s)",
			days(window), gain, days(c.PriorityMaxAge))
	}
	if c.PriorityWeightAge > 0 {
		switch {
		case c.PriorityAccrueAlways:
			add("PriorityFlags", "ACCRUE_ALWAYS", "age accrues from submission, even while held or waiting on a dependency, and accrual limits do not apply")
		case c.MaxJobsAccrue > 0:
			add("MaxJobsAccrue", fmt.Sprint(c.MaxJobsAccrue), "only your %d oldest eligible pending jobs accrue age: a successor queued behind as many of your pending jobs gains no age until they start", c.MaxJobsAccrue)
		default:
			add("MaxJobsAccrue", "none", "every eligible pending job accrues age (no accrual limit for you)")
		}
	}
	others := []struct {
		name string
		w    float64
		what string
	}{
		{"PriorityWeightFairshare", c.PriorityWeightFairshare, "your recent usage: a long chain's own usage lowers its successors' priority"},
		{"PriorityWeightJobSize", c.PriorityWeightJobSize, "the job's size"},
		{"PriorityWeightPartition", c.PriorityWeightPartition, "the partition's PriorityJobFactor"},
		{"PriorityWeightQOS", c.PriorityWeightQOS, "the QOS's priority"},
	}
	for _, o := range others {
		if o.w == 0 {
			continue
		}
		rel := "below"
		switch {
		case o.w > c.PriorityWeightAge:
			rel = "above"
		case o.w == c.PriorityWeightAge:
			rel = "equal to"
		}
		add(o.name, fmt.Sprintf("%g", o.w), "up to %g points for %s, %s the age weight", o.w, o.what, rel)
	}
}

// GridCell is one setting of the site grid: a preset over the hand-made
// ls6 that changes what a successor queued early gains.
type GridCell struct {
	Name  string     // the cell's name
	Class SiteClass  // what Classify names its configuration
	About string     // what it changes, in words
	File  PresetFile // the preset (base ls6)
}

// GridLS6 names the grid's cell of the hand-made ls6 preset.
const GridLS6 = "ls6"

// GridCalibrated names the grid's calibrated LS6 preset: not a setting of
// ls6 but `mirage sim calibrate`'s fit of it (eval fits it before the
// scored months and adds it to SiteGrid's cells).
const GridCalibrated = "calibrated"

// SiteGrid is the grid of site settings the evaluation scores every default
// policy under (issue 45), each over the hand-made ls6 preset (72 nodes,
// weights age 1000, size 100, fair-share 500, PriorityMaxAge 7 days,
// bf_window 2 days): ls6 itself, priority/basic, age weight 0,
// age-dominant (weight 10000) with PriorityMaxAge 1 day and 14 days,
// fair-share-dominant (weight 10000), MaxJobsAccrue 1 per user and
// bf_window 1 day: one cell per SiteClass, named as its class but for ls6
// (SiteAge7d).
func SiteGrid() []GridCell {
	ls6 := ParamsOf(LS6())
	with := func(f func(*Params)) Params {
		p := ls6
		f(&p)
		return p
	}
	one, day := 1, 24*time.Hour
	return []GridCell{
		{Name: GridLS6, Class: SiteAge7d, About: "the hand-made ls6: age 1000 over 7 days, fair-share 500, size 100", File: PresetFile{Base: "ls6"}},
		{Name: string(SiteFIFO), Class: SiteFIFO, About: "priority/basic: submission order is priority", File: PresetFile{Base: "ls6", Site: SiteParams{PriorityType: PriorityBasic}}},
		{Name: string(SiteNoAge), Class: SiteNoAge, About: "PriorityWeightAge 0 (Slurm's default)", File: PresetFile{Base: "ls6", Params: with(func(p *Params) { p.AgeWeight = 0 })}},
		{Name: string(SiteAge1d), Class: SiteAge1d, About: "age-dominant: age 10000, PriorityMaxAge 1 day", File: PresetFile{Base: "ls6", Params: with(func(p *Params) { p.AgeWeight, p.MaxAge = 10000, day })}},
		{Name: string(SiteAge14d), Class: SiteAge14d, About: "age-dominant: age 10000, PriorityMaxAge 14 days", File: PresetFile{Base: "ls6", Params: with(func(p *Params) { p.AgeWeight, p.MaxAge = 10000, 14*day })}},
		{Name: string(SiteFairshare), Class: SiteFairshare, About: "fair-share-dominant: fair-share 10000", File: PresetFile{Base: "ls6", Params: with(func(p *Params) { p.FairshareWeight = 10000 })}},
		{Name: string(SiteAccrueCap), Class: SiteAccrueCap, About: "MaxJobsAccrue 1 per user", File: PresetFile{Base: "ls6", Site: SiteParams{MaxJobsAccrue: &one}}},
		{Name: string(SiteShortWindow), Class: SiteShortWindow, About: "bf_window 1 day (below the 2-day limit)", File: PresetFile{Base: "ls6", Site: SiteParams{BFWindow: &day}}},
	}
}

// GridCellNamed is the SiteGrid cell of that name.
func GridCellNamed(name string) (GridCell, bool) {
	for _, c := range SiteGrid() {
		if c.Name == name {
			return c, true
		}
	}
	return GridCell{}, false
}

// Config builds the cell's configuration (as LoadPresetFile would from its
// file).
func (g GridCell) Config() (Config, error) {
	return g.File.Build("grid cell " + g.Name)
}
