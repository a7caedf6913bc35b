package k8s

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
)

// A tenant relabels its borrowed pod as another team's own work: it drops
// the borrowed label and writes team-b into the team label. With the
// admin's namespace mapping (the rules file) and borrowed work known by its
// priority class, the pod still counts as team-a's borrowed work, team-b's
// quota is untouched, and team-b's request reclaims it.
//
// Worked by hand: 4 nodes × 10 GPUs, quotas 20/20. team-a holds a1, a2 (10
// each, own) and a3 (10, borrowed); team-b holds b1 (10). team-b asks for 4
// GPUs: it has 20 − 10 = 10 of quota free and no node has room, so the
// borrowed a3 is reclaimed and b2 goes on its node n4. Were the labels
// believed, team-b would hold 20 of its 20 and the request could only
// borrow or wait (nothing is free), a3 untouched.
func TestTenantRelabellingChangesNothing(t *testing.T) {
	rules := teamRules(t, "teams: [{name: team-a, gpus: 20, namespaces: [ns-a]}, {name: team-b, gpus: 20, namespaces: [ns-b]}]\nborrowing: {grace: 30s}\n")
	a3 := pod("ns-a", "a3").On("n4").GPUs(10).Borrowed().Obj()
	delete(a3.Labels, LabelBorrowed)
	a3.Labels[DefaultTeamLabel] = "team-b"
	pods := []corev1.Pod{
		pod("ns-a", "a1").On("n1").GPUs(10).Team("team-a").Obj(),
		pod("ns-a", "a2").On("n2").GPUs(10).Obj(),
		pod("ns-b", "b1").On("n3").GPUs(10).Team("team-b").Obj(),
		a3,
	}
	rc := rules.Config()
	m, err := Mapping{}.WithAdmin(rc.NamespaceTeams())
	if err != nil {
		t.Fatal(err)
	}
	cs := fakeCluster(pods...)
	var logs bytes.Buffer
	tc := NewTeamCluster(NewForClientset(cs, Config{Mapping: m, Namespace: "ns-b", Clock: fixedClock{now: t0}, PollInterval: time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}), rules)
	tc.Log = slog.New(slog.DiscardHandler)

	inv, err := tc.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := inv.Team("team-a"), inv.Team("team-b"); a == nil || b == nil || a.Used != 30 || a.Borrowed != 10 || b.Used != 10 || b.Borrowed != 0 {
		t.Fatalf("teams %+v / %+v: want team-a 30 used (10 borrowed), team-b 10 used", a, b)
	}
	var text bytes.Buffer
	if err := inv.View(ViewOptions{}).WriteText(&text); err != nil || !strings.Contains(text.String(), "ns-a/a3  mirage.io/team      \"team-b\"  team-a") ||
		!strings.Contains(text.String(), "ns-a/a3  mirage.io/borrowed  \"\"        borrowed") {
		t.Errorf("inventory text lacks the mislabelled pod (%v):\n%s", err, text.String())
	}
	res, err := tc.Place(context.Background(), provisioner.SubmitRequest{Name: "b2", Account: "team-b", GPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Verdict != team.VerdictReclaim || res.Node != "n4" || !slices.Equal(evictions(cs), []string{"a3"}) {
		t.Errorf("verdict %s on %s, evicted %v; want reclaim of a3 on n4", res.Decision.Verdict, res.Node, evictions(cs))
	}
	for _, want := range []string{"pod=ns-a/a3 label=mirage.io/team value=team-b counted=team-a", "pod=ns-a/a3 label=mirage.io/borrowed value=\"\" counted=borrowed"} {
		if n := strings.Count(logs.String(), want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, logs.String())
		}
	}

	// A checkpoint time still to come cannot be true: ignored.
	future := pod("ns-a", "f").On("n1").GPUs(1).Obj()
	future.Annotations = map[string]string{AnnotationLastCheckpoint: t0.Add(time.Hour).Format(time.RFC3339)}
	past := pod("ns-a", "p").On("n1").GPUs(1).Obj()
	past.Annotations = map[string]string{AnnotationLastCheckpoint: t0.Add(-time.Hour).Format(time.RFC3339)}
	cps := BuildInventory(t0, nil, []corev1.Pod{future, past}, m).Checkpoints
	if _, ok := cps["pod/ns-a/f"]; ok || !cps["pod/ns-a/p"].Equal(t0.Add(-time.Hour)) {
		t.Errorf("checkpoints %v: want only p's, an hour ago", cps)
	}

	// Unmapped namespaces have no team, whatever their label says.
	if got := m.Team(ptr(pod("elsewhere", "x").Team("team-a").Obj())); got != "" {
		t.Errorf("pod in an unmapped namespace labelled team-a: team %q, want none", got)
	}
	// The flags may add namespaces, not contradict the rules file.
	if _, err := (Mapping{NamespaceTeams: map[string]string{"ns-a": "team-b"}}).WithAdmin(rc.NamespaceTeams()); err == nil {
		t.Error("--namespace-team ns-a=team-b accepted against the rules file's ns-a: team-a")
	}
}
