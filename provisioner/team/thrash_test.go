package team

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Minimum run time: borrowed work younger than it is no victim. Two nodes
// × 10 GPUs on a backend that does not queue (quotas overcommitted): n1 holds team-a's own 10;
// n2 team-a's borrowed x (5 GPUs, started 1 h ago) and y (5, started
// 5 min ago). team-b (0 of 20 used) asks for 5: within quota, nothing
// free → reclaim. By progress alone y (5 min lost) would go; with
// minRuntime 30m y is too young, so x goes. Once x is 10 min old as well
// no victim is left: deferred until the first comes of age, x at
// −10 m + 30 m = +20 m (y at +25 m).
func TestReclaimMinRuntime(t *testing.T) {
	r := rules(t, twoTeams+"overcommit: true\nborrowing: {minRuntime: 30m}\n")
	b := cluster(2, 10).kubernetes()
	b.run("own", "team-a", 10, "n1")
	b.borrowed("x", "team-a", 5, "n2").Start = rt0.Add(-time.Hour)
	b.borrowed("y", "team-a", 5, "n2").Start = rt0.Add(-5 * time.Minute)
	req := &provisioner.SubmitRequest{Account: "team-b", GPUs: 5}
	d, err := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: req})
	if err != nil || d.Verdict != VerdictReclaim || len(d.Reclaim.Victims) != 1 || d.Reclaim.Victims[0].JobID != "x" {
		t.Fatalf("decision %+v %v: want x reclaimed", d, err)
	}
	// Without the minimum run time, progress decides: y.
	d, _ = rules(t, twoTeams+"overcommit: true\n").Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "team-b", GPUs: 5}})
	if d.Verdict != VerdictReclaim || d.Reclaim.Victims[0].JobID != "y" {
		t.Fatalf("without minRuntime: %+v, want y", d)
	}
	b.s.Job("x").Start = rt0.Add(-10 * time.Minute)
	d, err = r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "team-b", GPUs: 5}})
	if err != nil || d.Verdict != VerdictDefer || !strings.Contains(d.Reason, "the first comes of age at 2026-11-23T09:20:00Z") {
		t.Errorf("both young: %s %q %v; want deferred until x comes of age at 09:20", d.Verdict, d.Reason, err)
	}
	// A team's own setting wins: team-a's borrowed work may go after 5m.
	r = rules(t, "teams: [{name: team-a, gpus: 20, minRuntime: 5m}, {name: team-b, gpus: 20}]\novercommit: true\nborrowing: {minRuntime: 30m}\n")
	d, _ = r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "team-b", GPUs: 5}})
	if d.Verdict != VerdictReclaim || d.Reclaim.Victims[0].JobID != "y" {
		t.Errorf("team-a minRuntime 5m: %s %+v, want y (both of age; y least progress)", d.Verdict, d.Reclaim)
	}
}

// Back-off: a team whose borrowed work was reclaimed less than its
// back-off ago does not borrow; its work within quota goes on. team-a
// holds 20 of 20 on n1, n2; n3, n4 are idle. Its borrowed job was
// reclaimed at −5 m: with a back-off of 10 m it borrows again from +5 m
// (deferred now); reclaimed at −15 m, it borrows now. team-b's reclaims
// do not hold team-a back. With team-a's own back-off of 2 m: borrows.
func TestBorrowBackoff(t *testing.T) {
	r := rules(t, twoTeams+"borrowing: {backoff: 10m}\n")
	b := cluster(4, 10).kubernetes()
	b.run("a1", "team-a", 10, "n1")
	b.run("a2", "team-a", 10, "n2")
	decide := func(r *Rules, reclaimed ...provisioner.Reclaimed) *Decision {
		t.Helper()
		b.s.Reclaimed = reclaimed
		d, err := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "team-a", GPUs: 4}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := decide(r, provisioner.Reclaimed{JobID: "pod/ns/a9", Team: "team-a", Time: rt0.Add(-5 * time.Minute)})
	if d.Verdict != VerdictDefer || !strings.Contains(d.Reason, "its borrowed work (pod/ns/a9) was reclaimed at 2026-11-23T08:55:00Z: it borrows again from 2026-11-23T09:05:00Z (back-off 10m0s)") {
		t.Errorf("reclaimed 5 min ago: %s %q", d.Verdict, d.Reason)
	}
	if d := decide(r, provisioner.Reclaimed{Team: "team-a", Time: rt0.Add(-15 * time.Minute)}); d.Verdict != VerdictBorrow {
		t.Errorf("reclaimed 15 min ago: %s %q, want borrow", d.Verdict, d.Reason)
	}
	if d := decide(r, provisioner.Reclaimed{Team: "team-b", Time: rt0.Add(-time.Minute)}); d.Verdict != VerdictBorrow {
		t.Errorf("another team's reclaim: %s %q, want borrow", d.Verdict, d.Reason)
	}
	own := rules(t, "teams: [{name: team-a, gpus: 20, backoff: 2m}, {name: team-b, gpus: 20}]\nborrowing: {backoff: 10m}\n")
	if d := decide(own, provisioner.Reclaimed{Team: "team-a", Time: rt0.Add(-5 * time.Minute)}); d.Verdict != VerdictBorrow {
		t.Errorf("team-a back-off 2m, reclaimed 5 min ago: %s %q, want borrow", d.Verdict, d.Reason)
	}
	// Within quota nothing is held back: team-b's first job is admitted.
	b.s.Reclaimed = []provisioner.Reclaimed{{Team: "team-b", Time: rt0}}
	if d, _ := r.Decide(DecideInput{Now: rt0, Snapshot: b.s, Request: &provisioner.SubmitRequest{Account: "team-b", GPUs: 4}}); d.Verdict != VerdictAdmit {
		t.Errorf("team-b within quota after its own reclaim: %s %q", d.Verdict, d.Reason)
	}
}

// Ties are broken deterministically, whatever the map order: equal victims
// (same GPUs, priority and progress) on one node → the lower job id; on two
// nodes → the node first by name.
func TestReclaimTiesDeterministic(t *testing.T) {
	for range 20 {
		b := cluster(2, 10).kubernetes()
		b.run("o1", "team-a", 6, "n1")
		b.borrowed("bz", "team-a", 4, "n2")
		b.run("o2", "team-a", 2, "n2")
		b.borrowed("by", "team-a", 4, "n2")
		b.borrowed("bx", "team-a", 4, "n1")
		p, err := PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Team: "team-b", Demand: gpus1(4), IsBorrowed: isBorrowed})
		if err != nil || p.Node != "n1" || !slices.Equal(victims(p), []string{"bx"}) {
			t.Fatalf("two nodes: %+v %v, want bx on n1", p, err)
		}
		b.s.Jobs = slices.DeleteFunc(b.s.Jobs, func(j provisioner.Job) bool { return j.ID == "bx" })
		b.s.Nodes[0].GPUsUsed = 10 // n1 full of its own
		p, err = PlanReclaim(ReclaimInput{Now: rt0, Snapshot: b.s, Team: "team-b", Demand: gpus1(4), IsBorrowed: isBorrowed})
		if err != nil || !slices.Equal(victims(p), []string{"by"}) {
			t.Fatalf("one node: %+v %v, want by (before bz)", p, err)
		}
	}
}
