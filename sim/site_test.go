package sim

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// The site settings the simulator models, read from a slurm.conf: each
// line below sets one, and every value read is checked against the line.
func TestParseSlurmConfSiteSettings(t *testing.T) {
	conf := `
PriorityType=priority/multifactor
PriorityFlags=SMALL_RELATIVE_TO_TIME,ACCRUE_ALWAYS
SchedulerParameters=bf_window=1440,bf_max_job_user=20,bf_min_age_reserve=600,bf_continue
NodeName=n1 CPUs=8
`
	c, err := ParseSlurmConf(strings.NewReader(conf), Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if c.PriorityType != PriorityMultifactor || !c.PriorityAccrueAlways {
		t.Errorf("PriorityType %q, accrue always %v; want multifactor, true", c.PriorityType, c.PriorityAccrueAlways)
	}
	if c.BFWindow != 24*time.Hour || c.BFMaxJobUser != 20 || c.BFMinAgeReserve != 10*time.Minute {
		t.Errorf("bf_window %s, bf_max_job_user %d, bf_min_age_reserve %s; want 24h, 20, 10m", c.BFWindow, c.BFMaxJobUser, c.BFMinAgeReserve)
	}
	// A PriorityFlags line without ACCRUE_ALWAYS clears it; a file without
	// a PriorityType keeps the base's (ls6: multifactor).
	c, err = ParseSlurmConf(strings.NewReader("PriorityFlags=MAX_TRES\nNodeName=n1\n"), c)
	if err != nil {
		t.Fatal(err)
	}
	if c.PriorityAccrueAlways || c.PriorityType != PriorityMultifactor {
		t.Errorf("after PriorityFlags=MAX_TRES: accrue always %v, type %q", c.PriorityAccrueAlways, c.PriorityType)
	}
	_, err = ParseSlurmConf(strings.NewReader("PriorityType=priority/fancy\n"), Defaults())
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("unknown PriorityType: %v, want ErrConfig naming line 1", err)
	}
}

// Defaults are Slurm 22.05's: FIFO, no accrual or backfill limits; the
// ls6 preset weighs priorities, so it is multifactor.
func TestSiteDefaults(t *testing.T) {
	d := Defaults()
	if d.PriorityType != PriorityBasic || d.PriorityAccrueAlways || d.MaxJobsAccrue != 0 || d.BFMaxJobUser != 0 || d.BFMinAgeReserve != 0 || d.BFWindow != 24*time.Hour {
		t.Errorf("defaults %+v", d)
	}
	if l := LS6(); l.PriorityType != PriorityMultifactor {
		t.Errorf("ls6 PriorityType %q", l.PriorityType)
	}
	bad := Defaults()
	bad.Nodes = []NodeConfig{{Name: "n1"}}
	bad.PriorityType = "multifactor"
	if _, err := New(bad); !errors.Is(err, ErrConfig) {
		t.Errorf("PriorityType %q: %v, want ErrConfig", bad.PriorityType, err)
	}
	bad.PriorityType, bad.MaxJobsAccrue = PriorityBasic, -1
	if _, err := New(bad); !errors.Is(err, ErrConfig) {
		t.Errorf("MaxJobsAccrue -1: %v, want ErrConfig", err)
	}
}

// A job submitted through the seam is ranked by the model that ranks the
// trace's jobs: with recorded priorities weighed, it gets the median
// recorded priority of the trace's jobs of its size that started in the
// week before (nothing later), and TypicalUser names the user of median
// fair-share among theirs (here fair-share is not weighed: every factor
// is 1, and the tie goes by latest start, latest first). Four nodes,
// multifactor with only the recorded weight.
// The trace (t0 = day 10, all jobs run 1 h, recorded priorities):
//
//	old  day 1,  2 nodes, 0.9, user o   (started over a week before t0)
//	a    day 9,  2 nodes, 0.2, user a
//	b    day 9,  2 nodes, 0.4, user b   (starts after a: submitted later)
//	c    day 9,  1 node,  0.8, user c
//	late day 11, 2 nodes, 0.1, user l   (after t0: unseen)
//
// At t0 the 2-node jobs started within the week are a and b: median
// (0.2 + 0.4) / 2 = 0.3; their users by latest start b, a: the median of
// two is the second, a. For 3 nodes there are none: all sizes, a, b, c:
// median 0.4; users c, b, a: b.
func TestSeamJobsLikeTheTrace(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	cfg := Defaults()
	cfg.PriorityType = PriorityMultifactor
	cfg.PriorityWeightRecorded = 1000
	cfg.Nodes = []NodeConfig{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}, {Name: "n4"}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, at time.Time, nodes int, prio float64, user string) JobSpec {
		return JobSpec{ID: id, User: user, Account: "acct-" + user, Submit: at, TimeLimit: time.Hour, Runtime: time.Hour, Nodes: nodes, RecordedPriority: prio}
	}
	if err := s.Load([]JobSpec{job("old", day(1), 2, 0.9, "o"), job("a", day(9), 2, 0.2, "a"), job("b", day(9).Add(time.Minute), 2, 0.4, "b"),
		job("c", day(9).Add(2*time.Minute), 1, 0.8, "c"), job("late", day(11), 2, 0.1, "l")}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(day(1))
	s.Run(day(10))
	if got := s.TypicalRecordedPriority(2); math.Abs(got-0.3) > 1e-12 {
		t.Errorf("2 nodes: recorded priority %v, want 0.3", got)
	}
	if got := s.TypicalRecordedPriority(3); got != 0.4 {
		t.Errorf("3 nodes: recorded priority %v, want 0.4", got)
	}
	if u, a, ok := s.TypicalUser(2); u != "a" || a != "acct-a" || !ok {
		t.Errorf("2 nodes: typical user %q/%q %v, want a/acct-a", u, a, ok)
	}
	if u, _, _ := s.TypicalUser(3); u != "b" {
		t.Errorf("3 nodes: typical user %q, want b", u)
	}
	s.SetSubmitUser("b")
	id, err := s.Submit(context.Background(), provisioner.SubmitRequest{Name: "chain", Account: "acct-b", Nodes: 2, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if j := snap.Job(id); j == nil || j.User != "b" || j.Account != "acct-b" {
		t.Fatalf("submitted job %+v, want user b, account acct-b", j)
	}
	k, _ := s.lookup(id)
	if got := s.spec(k).recPrio; math.Abs(got-0.3) > 1e-12 {
		t.Errorf("submitted 2-node job: recorded priority %v, want 0.3", got)
	}
	// Without the weight nothing is looked up: the seam's job has none.
	s.SetSubmitUser("")
	unweighted := Defaults()
	unweighted.Nodes = cfg.Nodes
	u, err := New(unweighted)
	if err != nil {
		t.Fatal(err)
	}
	u.SetStart(day(1))
	id, err = u.Submit(context.Background(), provisioner.SubmitRequest{Account: "x", Nodes: 2, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k, _ = u.lookup(id)
	if sp := u.spec(k); sp.recPrio != 0 || u.users[sp.user] != "x" {
		t.Errorf("unweighted: recorded priority %v, user %q; want 0 and the account's name x", sp.recPrio, u.users[sp.user])
	}
}

// A preset file sets the site settings over its base, each optional: the
// grid's settings of issue 45 (priority/basic, MaxJobsAccrue 1 per user, a
// one-day bf_window, ...) are preset files over ls6.
func TestPresetFileSiteSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	params := "nodes: 72\npriority_weight_age: 1000\npriority_weight_job_size: 100\npriority_weight_fairshare: 500\nsched_latency: 1s\nbf_interval: 30s\n"
	c, err := Preset(write("site.yaml", "base: ls6\n"+params+
		"priority_type: priority/basic\npriority_accrue_always: true\nmax_jobs_accrue: 1\nbf_window: 24h\nbf_max_job_user: 10\nbf_min_age_reserve: 10m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.PriorityType != PriorityBasic || !c.PriorityAccrueAlways || c.MaxJobsAccrue != 1 || c.BFWindow != 24*time.Hour || c.BFMaxJobUser != 10 || c.BFMinAgeReserve != 10*time.Minute {
		t.Errorf("site settings read %+v", c)
	}
	// Absent settings keep the base's: ls6's multifactor and 2-day window.
	c, err = Preset(write("plain.yaml", "base: ls6\n"+params))
	if err != nil {
		t.Fatal(err)
	}
	if c.PriorityType != PriorityMultifactor || c.BFWindow != LS6().BFWindow || c.MaxJobsAccrue != 0 {
		t.Errorf("plain preset file: %q, bf_window %s, max_jobs_accrue %d; want ls6's", c.PriorityType, c.BFWindow, c.MaxJobsAccrue)
	}
	for name, extra := range map[string]string{
		"type.yaml":   "priority_type: fifo\n",
		"accrue.yaml": "max_jobs_accrue: -1\n",
		"window.yaml": "bf_window: 30s\n",
	} {
		if _, err := Preset(write(name, "base: ls6\n"+params+extra)); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	// A calibration from such a file keeps its site settings.
	pf, err := CalibratedPreset(Options{Preset: filepath.Join(dir, "site.yaml")}, "t.log", &Calibration{Best: Evaluation{Params: ParamsOf(LS6())}})
	if err != nil {
		t.Fatal(err)
	}
	if pf.Site.PriorityType != PriorityBasic || pf.Site.MaxJobsAccrue == nil || *pf.Site.MaxJobsAccrue != 1 {
		t.Errorf("calibrated preset's site settings %+v, want the origin's", pf.Site)
	}
}

// A job submitted through the seam takes its place among the trace's
// pending jobs by its typical recorded priority. One node; multifactor,
// recorded weight 1000 alone. Trace (hours after t0, all 1-node):
//
//	p1 0:00 (0.2), p2 1:00 (0.4), p3 2:00 (0.6): run 0–1, 1–2, 2–3
//	x  3:00 (0.1): runs 3–13
//	L  4:00 (0.25) and H 4:30 (0.5): wait for x; 1 h each
//
// S (1 h) is submitted through the seam at 5:00: the 1-node jobs that
// started in the week before are p1, p2, p3 and x, recorded 0.1, 0.2, 0.4,
// 0.6: median 0.3. Ranked H 500, S 300, L 250: H runs 13–14, S 14–15, L
// 15–16. With no recorded priority S (0) would come after L, at 15.
func TestSeamJobQueuesByTypicalPriority(t *testing.T) {
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.PriorityType = PriorityMultifactor
	cfg.PriorityWeightRecorded = 1000
	cfg.Backfill = false
	cfg.Nodes = []NodeConfig{{Name: "n1"}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, at time.Duration, prio float64, run time.Duration) JobSpec {
		return JobSpec{ID: id, User: id, Submit: t0.Add(at), TimeLimit: run, Runtime: run, Nodes: 1, RecordedPriority: prio}
	}
	h := time.Hour
	if err := s.Load([]JobSpec{job("p1", 0, 0.2, h), job("p2", h, 0.4, h), job("p3", 2*h, 0.6, h), job("x", 3*h, 0.1, 10*h),
		job("L", 4*h, 0.25, h), job("H", 4*h+30*time.Minute, 0.5, h)}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	s.Run(t0.Add(5 * h))
	id, err := s.Submit(context.Background(), provisioner.SubmitRequest{Account: "a", Nodes: 1, TimeLimit: h})
	if err != nil {
		t.Fatal(err)
	}
	s.Run(time.Time{})
	for _, c := range []struct {
		id    string
		start time.Duration
	}{{"H", 13 * h}, {id, 14 * h}, {"L", 15 * h}} {
		r, err := s.Result(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Start.Sub(t0); got != c.start {
			t.Errorf("%s started at +%s, want +%s", c.id, got, c.start)
		}
	}
}

// With fair-share weighed, TypicalUser takes the user of median fair-share
// factor. One node, no decay, one account each; three jobs submitted at t0
// run one after the other: u2's 5 h, u1's 10 h, u3's 1 h. At t0 + 20 h u1
// has used the most, u3 the least: factors rise u1 < u2 < u3, and the
// median is u2. (By latest start alone, u3, u1, u2, it would be u1.)
func TestTypicalUserByFairshare(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	cfg := Defaults()
	cfg.PriorityType = PriorityMultifactor
	cfg.PriorityWeightFairshare = 1000
	cfg.PriorityDecayHalfLife = 0
	cfg.Nodes = []NodeConfig{{Name: "n1"}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := time.Hour
	job := func(user string, run time.Duration) JobSpec {
		return JobSpec{ID: user, User: user, Account: "acct-" + user, Submit: t0, TimeLimit: run, Runtime: run, Nodes: 1}
	}
	if err := s.Load([]JobSpec{job("u2", 5*h), job("u1", 10*h), job("u3", h)}); err != nil {
		t.Fatal(err)
	}
	s.SetStart(t0)
	s.Run(t0.Add(20 * h))
	for _, c := range []struct {
		id    string
		start time.Duration
	}{{"u2", 0}, {"u1", 5 * h}, {"u3", 15 * h}} {
		if r, _ := s.Result(c.id); r.Start.Sub(t0) != c.start {
			t.Fatalf("%s started at +%s, want +%s", c.id, r.Start.Sub(t0), c.start)
		}
	}
	if u, a, ok := s.TypicalUser(1); u != "u2" || a != "acct-u2" || !ok {
		t.Errorf("typical user %q/%q %v, want u2/acct-u2", u, a, ok)
	}
}

// The guide's example preset file (docs/guide/training-and-evaluation.md,
// "The site's scheduler settings") is a preset file every --preset reads,
// with the values it shows.
func TestGuidePresetExample(t *testing.T) {
	b, err := os.ReadFile("../docs/guide/training-and-evaluation.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "### The site's scheduler settings")
	if !ok {
		t.Fatal("the guide has no section \"The site's scheduler settings\"")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	body, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no yaml block in the section")
	}
	path := filepath.Join(t.TempDir(), "site.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Preset(path)
	if err != nil {
		t.Fatalf("the guide's preset: %v", err)
	}
	if c.PriorityMaxAge != 24*time.Hour || c.MaxJobsAccrue != 1 || c.BFWindow != 24*time.Hour || c.BFMaxJobUser != 20 || c.BFMinAgeReserve != 10*time.Minute || c.PriorityType != PriorityMultifactor {
		t.Errorf("the guide's preset reads as %+v", c)
	}
}
