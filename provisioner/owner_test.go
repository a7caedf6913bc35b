package provisioner_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
)

// TestForeignTaggedJobsIgnored: another user copies a chain's tags into
// the comments of their own jobs — one as a new segment (1.0), one as a
// duplicate of the stored segment 0 — while segment 0 runs. The owner's
// engine adopts neither, cancels neither, reports each once (an event per
// job, over many cycles), and the chain goes on with its own jobs. Without
// the owner check (Self "") the same cycle adopts the forged segment: the
// check is what stops it. (The simulator's jobs belong to their account.)
func TestForeignTaggedJobsIgnored(t *testing.T) {
	for _, self := range []string{"alice", ""} {
		t.Run("self="+self, func(t *testing.T) {
			ctx := context.Background()
			s, st, ch, forged := forgeRun(t, self, nil, "mallory", func(ch *provisioner.Chain) []string {
				return []string{provisioner.ChainComment(ch, 1, 0), provisioner.ChainComment(ch, 0, 0)}
			})
			segs, _ := st.Segments(ctx, ch.ID)
			adopted := 0
			for _, sg := range segs {
				if forged[sg.JobID] {
					adopted++
				}
			}
			evs, _ := st.Events(ctx, ch.ID)
			reported := map[string]int{}
			for _, e := range evs {
				if e.Kind == provisioner.EventForeign {
					reported[e.JobID]++
				}
			}
			cancelled := 0
			for _, j := range s.History(simT0) {
				if forged[j.ID] && j.State == provisioner.StateCancelled {
					cancelled++
				}
			}
			if self == "" {
				if adopted == 0 {
					t.Errorf("without the owner check the forged segment was not adopted: the test would not tell")
				}
				return
			}
			if adopted != 0 || cancelled != 0 {
				t.Errorf("forged jobs: %d adopted, %d cancelled; want none (segments %+v)", adopted, cancelled, segs)
			}
			if len(reported) != 2 {
				t.Errorf("foreign events by job %v, want each of the 2 forged jobs", reported)
			}
			for id, n := range reported {
				if !forged[id] || n != 1 {
					t.Errorf("job %s reported %d times, want once", id, n)
				}
			}
			// The chain went on with its own successor.
			var own1 bool
			for _, sg := range segs {
				own1 = own1 || sg.Index == 1 && sg.JobID != "" && !forged[sg.JobID]
			}
			if !own1 {
				t.Errorf("no own segment 1 after an hour: %+v", segs)
			}
		})
	}
}

// forgeRun is the scenario both forging tests share: chain c-owned (lead,
// 3 segments of 55 min, account alice) under an engine for user self with
// key; 5 minutes in, account forger submits one job per comment; then an
// hour of 10-minute cycles. It returns the simulator, the store, the chain
// and the forged job ids.
func forgeRun(t *testing.T, self string, key *provisioner.TagKey, forger string, comments func(ch *provisioner.Chain) []string) (*sim.Sim, *provisioner.MemStore, provisioner.Chain, map[string]bool) {
	t.Helper()
	ctx := context.Background()
	s := newFourNodeSim(t)
	st := provisioner.NewMemStore()
	ch := provisioner.Chain{ID: "c-owned", Name: "mine", Script: "/x.sbatch", Policy: provisioner.PolicyLead, Segments: 3, MaxRetries: 2,
		Account: "alice", Partition: "batch", TimeLimit: 55 * time.Minute, Nodes: 1, GPUs: 4, State: provisioner.ChainActive, Created: simT0}
	if err := st.PutChain(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	eng := &provisioner.Engine{Cluster: simCluster{s}, Store: st, Clock: simClock{s}, Self: self, TagKey: key, Log: slog.New(slog.DiscardHandler)}
	if _, err := eng.CycleChains(ctx, []string{ch.ID}); err != nil {
		t.Fatal(err)
	}
	s.Run(simT0.Add(5 * time.Minute))
	forged := map[string]bool{}
	for _, comment := range comments(&ch) {
		id, err := s.Submit(ctx, provisioner.SubmitRequest{Name: "copy", Account: forger, Partition: "batch", TimeLimit: 30 * time.Minute,
			Nodes: 1, GPUs: 4, Comment: comment})
		if err != nil {
			t.Fatal(err)
		}
		forged[id] = true
	}
	for range 6 { // an hour of cycles
		s.Run(s.Now().Add(10 * time.Minute))
		if _, err := eng.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return s, st, ch, forged
}

// TestUnsignedTaggedJobsIgnored: the user's own jobs (or a program of
// theirs) carry copies of a chain's tags, unsigned or under a wrong MAC,
// submitted after the tag key was made. The engine with the key adopts
// neither, cancels neither, reports each once, and the chain goes on with
// its own jobs, whose comments it signed. Without the key the same cycles
// adopt the forged segment: the key is what stops it.
func TestUnsignedTaggedJobsIgnored(t *testing.T) {
	key := &provisioner.TagKey{Secret: []byte("0123456789abcdef0123456789abcdef"), Since: simT0.Add(-time.Hour)}
	for _, k := range []*provisioner.TagKey{key, nil} {
		t.Run("key="+fmt.Sprint(k != nil), func(t *testing.T) {
			ctx := context.Background()
			s, st, ch, forged := forgeRun(t, "alice", k, "alice", func(ch *provisioner.Chain) []string {
				return []string{provisioner.ChainComment(ch, 1, 0), provisioner.ChainComment(ch, 0, 0) + " " + provisioner.MACPrefix + strings.Repeat("ab", 16)}
			})
			segs, _ := st.Segments(ctx, ch.ID)
			adopted := 0
			for _, sg := range segs {
				if forged[sg.JobID] {
					adopted++
				}
			}
			if k == nil {
				if adopted == 0 {
					t.Errorf("without the key the forged segment was not adopted: the test would not tell")
				}
				return
			}
			reported := map[string]int{}
			evs, _ := st.Events(ctx, ch.ID)
			for _, e := range evs {
				if e.Kind == provisioner.EventForeign {
					reported[e.JobID]++
				}
			}
			cancelled, ownSigned := 0, 0
			for _, j := range s.History(simT0) {
				if forged[j.ID] && j.State == provisioner.StateCancelled {
					cancelled++
				}
				if !forged[j.ID] && k.Verified("alice", &j) && strings.Contains(j.Comment, provisioner.MACPrefix) {
					ownSigned++
				}
			}
			if adopted != 0 || cancelled != 0 || len(reported) != 2 {
				t.Errorf("forged jobs: %d adopted, %d cancelled, reported %v; want none adopted or cancelled, both reported", adopted, cancelled, reported)
			}
			if len(segs) < 2 || ownSigned < 2 {
				t.Errorf("chain went on with %d segments, %d signed own jobs; want at least 2 of each: %+v", len(segs), ownSigned, segs)
			}
		})
	}
}
