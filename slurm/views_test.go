package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// viewRunner answers squeue and sacct from renderQueue's records (squeue
// from live, sacct from history), sinfo with no node, and records every
// sbatch without submitting anything.
type viewRunner struct {
	live, history *renderQueue
	sbatch        int
}

func (r *viewRunner) Run(ctx context.Context, name string, args, env []string) ([]byte, []byte, error) {
	switch name {
	case "squeue":
		return r.live.Run(ctx, name, args, env)
	case "sacct":
		return r.history.Run(ctx, name, args, env)
	case "sinfo":
		if len(args) > 0 && args[0] == "--version" {
			return []byte("slurm-wlm 22.05.8\n"), nil, nil
		}
		return nil, nil, nil
	case "sbatch":
		r.sbatch++
		return []byte(fmt.Sprintf("%d\n", 900+r.sbatch)), nil, nil
	}
	return nil, nil, fmt.Errorf("viewRunner: no answer for %s", name)
}

// paddedHistory is sacct's answer in which another user's 17 jobs, each
// on 65,536 nodes, come before alice's job 40: 16 of them use up the
// 1,048,576 host names one document may expand to (maxDocHosts), so the
// 17th and job 40 after it are skipped.
func paddedHistory(victim map[string]string) *renderQueue {
	q := &renderQueue{userCol: "User"}
	for i := range 17 {
		j := sacctJob(fmt.Sprint(21+i), "mallory", "pad", "")
		j["NodeList"] = "n[1-65536]"
		q.jobs = append(q.jobs, j)
	}
	q.jobs = append(q.jobs, victim)
	return q
}

// TestSkippedHistoryChangesNothing (#50): sacct text whose records past
// the hostname budget were skipped still counted as complete history, so
// alice's segment, whose job 40 had ended and left squeue, was in neither
// view: it was marked LOST and submitted again. Now the history comes
// with ErrIncomplete and the jobs it did read: the segment stays as it
// was and nothing is submitted (its predecessor 30 min into a 1 h limit:
// lead, 10 min before the end, waits).
func TestSkippedHistoryChangesNothing(t *testing.T) {
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	victim := sacctJob("40", "alice", "train", "mirage:c-1/0.0")
	victim["Start"], victim["End"] = "2026-11-23T05:30:00", "2026-11-23T05:59:00"
	r := &viewRunner{live: &renderQueue{userCol: "UserName"}, history: paddedHistory(victim)}
	c, logs := forgeClient(t, r)
	hist, err := c.History(context.Background(), now.Add(-24*time.Hour))
	if !errors.Is(err, provisioner.ErrIncomplete) || !strings.Contains(err.Error(), "2 record(s) could not be read") {
		t.Fatalf("History: %v; want ErrIncomplete for 2 skipped records", err)
	}
	if len(hist) != 16 {
		t.Errorf("History read %d jobs, want the 16 within the budget", len(hist))
	}
	if !strings.Contains(logs.String(), "job=40") {
		t.Errorf("the skipped record of job 40 was not logged:\n%s", logs)
	}

	st := provisioner.NewMemStore()
	ctx := context.Background()
	ch := provisioner.Chain{ID: "c-1", Name: "train", Script: "/home/alice/train.sbatch", Policy: provisioner.PolicyLead, Segments: 2, MaxRetries: 2,
		TimeLimit: time.Hour, Nodes: 1, State: provisioner.ChainActive, Created: now.Add(-time.Hour)}
	seg := provisioner.Segment{ChainID: "c-1", JobID: "40", State: provisioner.StateRunning, Submit: now.Add(-time.Hour), Start: now.Add(-30 * time.Minute)}
	if err := st.PutChain(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSegment(ctx, &seg); err != nil {
		t.Fatal(err)
	}
	e := &provisioner.Engine{Cluster: c, Store: st, Clock: provisioner.ClockFunc(func() time.Time { return now }), Self: "alice", Log: slog.New(slog.DiscardHandler)}
	rep, err := e.Cycle(ctx)
	if err != nil {
		t.Fatalf("cycle: %v", err)
	}
	if rep.HistoryOK {
		t.Errorf("the history was taken as complete")
	}
	segs, _ := st.Segments(ctx, "c-1")
	if r.sbatch != 0 || len(segs) != 1 || segs[0].State != provisioner.StateRunning {
		t.Errorf("after the cycle: %d sbatch, segments %+v; want none and segment 0 still RUNNING", r.sbatch, segs)
	}
	evs, _ := st.Events(ctx, "")
	if len(evs) != 1 || !strings.Contains(evs[0].Detail, "history incomplete") {
		t.Errorf("cluster events %+v; want one saying the history is incomplete", evs)
	}
}

// TestNewFailsClosedWithoutUser (#50): when the current user has no
// resolvable name, New used to leave Config.Self empty, which turned every
// owner check off (provisioner.Owns took another user's tagged job for the
// user's own). Now it refuses, saying what to do.
func TestNewFailsClosedWithoutUser(t *testing.T) {
	old := currentUser
	defer func() { currentUser = old }()
	currentUser = func() (*user.User, error) { return nil, user.UnknownUserIdError(4242) }
	c, err := New(Config{Runner: &fakeRunner{}})
	if !errors.Is(err, ErrNoUser) || c != nil || !strings.Contains(err.Error(), "getent passwd") {
		t.Fatalf("New without a resolvable user: %v, %v; want ErrNoUser saying what to do", c, err)
	}
	currentUser = func() (*user.User, error) { return &user.User{Uid: "4242"}, nil }
	if _, err := New(Config{Runner: &fakeRunner{}}); !errors.Is(err, ErrNoUser) {
		t.Errorf("a user without a name: %v, want ErrNoUser", err)
	}
	// Given explicitly, the user needs no lookup.
	c, err = New(Config{Runner: &fakeRunner{}, Self: "alice"})
	if err != nil || c.Self() != "alice" || provisioner.Owns(c, &provisioner.Job{User: "mallory"}) {
		t.Errorf("Self alice: %v, %v; want a client that owns alice's jobs only", c, err)
	}
}

// TestOwnNewlineNameHidesNoSegment (#50): a job of the user's own named
// "a\nb" splits its line of sacct's text (names and comments are read for
// the user's jobs only) into fragments that do not parse. With no mirage
// tag in them they cannot hide a segment, and the history stays complete:
// before, every such job in the 24 h window made it incomplete, and a
// segment whose submission left no job was never given up (the crash e2e
// test stalled after a crash before sbatch). A tagged record split the same
// way still makes it incomplete.
func TestOwnNewlineNameHidesNoSegment(t *testing.T) {
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		comment  string
		complete bool
	}{
		{"", true},
		{"mirage:c-1/1.0", false},
	} {
		odd := sacctJob("55", "alice", "a\nb", tc.comment)
		seg := sacctJob("40", "alice", "train", "mirage:c-1/0.0")
		r := &viewRunner{live: &renderQueue{userCol: "UserName"}, history: &renderQueue{userCol: "User", jobs: []map[string]string{odd, seg}}}
		c, _ := forgeClient(t, r)
		hist, err := c.History(context.Background(), now.Add(-24*time.Hour))
		if tc.complete != (err == nil) || !tc.complete && !errors.Is(err, provisioner.ErrIncomplete) {
			t.Errorf("comment %q: History: %v; want complete %v", tc.comment, err, tc.complete)
		}
		found := false
		for _, j := range hist {
			found = found || j.ID == "40" && j.Comment == "mirage:c-1/0.0"
		}
		if !found {
			t.Errorf("comment %q: job 40 with its tag not read: %+v", tc.comment, hist)
		}
	}
}
