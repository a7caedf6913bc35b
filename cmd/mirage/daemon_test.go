package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
)

// TestChainLifecycle drives a 3-segment reactive chain through submit,
// the daemon every 10 minutes of simulated time, status and log.
//
// By hand (empty cluster, limit 55 min, every segment runs to its limit):
// submit 08:00 → sim-1 08:00–08:55; the daemon sees it ended at 09:00 →
// sim-2 09:00–09:55; at 10:00 → sim-3 10:00–10:55; at 11:00 the chain is
// done. Gaps +5 min and +5 min.
func TestChainLifecycle(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	script := e.script(t, "x.sbatch", "-t 55")
	id := e.submitChain(t, script, "--segments", "3", "--policy", "reactive", "--", "-p", "batch")
	out, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "20")
	if code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 22 { // 20 cycle lines + 2 submission lines
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	for _, want := range []string{
		"2026-03-02T08:00:00Z cycle: 1 active chains; 0 submitted, 0 rejected, 0 adopted, 1 waits, 0 ended, 0 cancelled, 0 errors",
		"2026-03-02T09:00:00Z cycle: 1 active chains; 1 submitted, 0 rejected, 0 adopted, 0 waits, 0 ended, 0 cancelled, 0 errors",
		"  chain " + id + " segment 1.0: job sim-2",
		"  chain " + id + " segment 2.0: job sim-3",
		"2026-03-02T11:00:00Z cycle: 1 active chains; 0 submitted, 0 rejected, 0 adopted, 0 waits, 1 ended, 0 cancelled, 0 errors",
		"2026-03-02T11:10:00Z cycle: 0 active chains; 0 submitted, 0 rejected, 0 adopted, 0 waits, 0 ended, 0 cancelled, 0 errors",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("daemon output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = e.run(t, "status", id)
	want := `chain     ` + id + ` (x.sbatch)
state     done: all 3 segments ran (last: segment 2, job sim-3, TIMEOUT)
script    ` + script + ` -p batch
policy    reactive, 3 segments, max retries 2
shape     limit 55m0s, 1 node(s), 0 GPU(s), partition batch, account -
created   2026-03-02T08:00:00Z

SEG  TRY  JOB    STATE    EXIT  SUBMIT                START                 END                   GAP    NOTE
0    0    sim-1  TIMEOUT  0     2026-03-02T08:00:00Z  2026-03-02T08:00:00Z  2026-03-02T08:55:00Z  -      -
1    0    sim-2  TIMEOUT  0     2026-03-02T09:00:00Z  2026-03-02T09:00:00Z  2026-03-02T09:55:00Z  +5m0s  -
2    0    sim-3  TIMEOUT  0     2026-03-02T10:00:00Z  2026-03-02T10:00:00Z  2026-03-02T10:55:00Z  +5m0s  -

interruption 10m0s in total, overlap 0s in total
`
	if code != 0 || out != want {
		t.Errorf("status: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	out, _, _ = e.run(t, "status")
	if !strings.Contains(out, id+"  x.sbatch  reactive  done   2    3 segments  sim-3  TIMEOUT    +5m0s     all 3 segments ran") {
		t.Errorf("status table:\n%s", out)
	}
	// log: first, a wait at 08:00 (segment 0 just submitted, pending), 5
	// waits while it runs (08:10–08:50), submit at 09:00, 5 waits
	// (09:10–09:50), submit at 10:00, nothing while the last segment runs,
	// end at 11:00.
	out, _, code = e.run(t, "log", id, "--json", "--events")
	var lg struct {
		Decisions []chainops.DecisionJSON `json:"decisions"`
		Events    []chainops.EventJSON    `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &lg); err != nil || code != 0 {
		t.Fatalf("log: exit %d, %v\n%s", code, err, out)
	}
	// Consecutive waits for the same reason are one entry each (#51: a
	// change of reason starts a new one): pending at 08:00, ×5 running
	// from 08:10 to 08:50, ×5 from 09:10 to 09:50.
	var acts []string
	for _, d := range lg.Decisions {
		a := d.Action
		if d.Count > 1 {
			a += fmt.Sprintf("×%d(%s–%s)", d.Count, d.Time.Format("15:04"), d.Last.Format("15:04"))
		}
		acts = append(acts, a)
	}
	wantActs := "first wait wait×5(08:10–08:50) submit wait×5(09:10–09:50) submit end"
	if strings.Join(acts, " ") != wantActs {
		t.Errorf("decisions %v\nwant %s", acts, wantActs)
	} else if pending, running := lg.Decisions[1].Reason, lg.Decisions[2].Reason; pending != "predecessor job sim-1 still pending: a successor would only queue behind it: wait" || !strings.HasPrefix(running, "predecessor still running") {
		t.Errorf("the waits' reasons %q then %q, want the predecessor pending (said once), then running", pending, running)
	}
	var gaps []float64
	for _, ev := range lg.Events {
		if ev.Kind == string(provisioner.EventGap) {
			gaps = append(gaps, ev.Value)
		}
	}
	if fmt.Sprint(gaps) != "[300 300]" {
		t.Errorf("recorded gaps %v, want [300 300]", gaps)
	}
	out, _, code = e.run(t, "log", id)
	if code != 0 || !strings.Contains(out, "predecessor segment 0 (job sim-1) ended TIMEOUT at 2026-03-02T08:55:00Z: submit its successor now") {
		t.Errorf("log table: exit %d\n%s", code, out)
	}
	// Cancelling a chain that is done changes nothing.
	out, _, code = e.run(t, "cancel", id)
	if code != 0 || !strings.Contains(out, "is done") {
		t.Errorf("cancel of a done chain: exit %d %q", code, out)
	}
}

func TestUnknownChain(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	e.run(t, "status") // creates the database
	for _, cmd := range []string{"status", "log", "cancel"} {
		_, stderr, code := e.run(t, cmd, "c-20260101-000000")
		if code != cmdutil.ExitBadInput || !strings.Contains(stderr, `chain "c-20260101-000000": chain not found (list chains with mirage status)`) {
			t.Errorf("%s: exit %d, %q", cmd, code, stderr)
		}
	}
}

func TestDaemonLockHeld(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "2")
	lk, err := state.TryLock(filepath.Join(e.state, state.LockName))
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.run(t, "daemon", "--once")
	if code != 0 || out != "another mirage daemon holds the lock "+filepath.Join(e.state, state.LockName)+": not acting this time\n" {
		t.Errorf("exit %d, out %q, err %q", code, out, stderr)
	}
	// submit waits for the lock, then gives up with exit 4.
	_, stderr, code = e.run(t, "submit", e.script(t, "y.sbatch", "-t 55"), "--lock-wait", "200ms")
	if code != cmdutil.ExitUnavailable || !strings.Contains(stderr, "another mirage process holds the lock") {
		t.Errorf("submit under the lock: exit %d, %q", code, stderr)
	}
	lk.Unlock()
	out, _, code = e.run(t, "daemon", "--once")
	if code != 0 || !strings.Contains(out, "cycle: 1 active chains") {
		t.Errorf("after release: exit %d %q", code, out)
	}
}

func TestCorruptDatabase(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(e.state, state.DBName)
	garbage := []byte("not a database at all, but precious notes\n")
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"daemon", "--once"}, {"submit", e.script(t, "x.sbatch", "-t 55")}, {"log", "c-1"}} {
		_, stderr, code := e.run(t, args...)
		if code != cmdutil.ExitUnavailable || !strings.Contains(stderr, "state database is corrupt or not a SQLite database") {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
	if b, _ := os.ReadFile(db); !bytes.Equal(b, garbage) {
		t.Error("corrupt database overwritten")
	}
}

func TestCancelChain(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--until-done")
	e.s.Run(chainT0.Add(10 * time.Minute))
	out, stderr, code := e.run(t, "cancel", id)
	if code != 0 || out != "cancelled job sim-1 (segment 0)\nchain "+id+" cancelled\n" {
		t.Fatalf("cancel: exit %d %q %q", code, out, stderr)
	}
	hist := e.s.History(chainT0)
	if len(hist) != 1 || hist[0].State != provisioner.StateCancelled {
		t.Fatalf("simulator: %+v", hist)
	}
	out, _, _ = e.run(t, "daemon", "--once")
	if !strings.Contains(out, "cycle: 0 active chains") {
		t.Errorf("daemon after cancel: %q", out)
	}
	out, _, _ = e.run(t, "status", id, "--json")
	var cj chainops.ChainJSON
	if err := json.Unmarshal([]byte(out), &cj); err != nil || cj.State != "cancelled" || cj.SegmentList[0].State != "CANCELLED" {
		t.Errorf("status: %v %+v", err, cj)
	}
}

// TestRecover loses the database while segment 1 runs; recover rebuilds the
// chain from the tagged jobs and the daemon finishes it without submitting
// any segment twice.
func TestRecover(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	script := e.script(t, "x.sbatch", "-t 55")
	id := e.submitChain(t, script, "--segments", "3", "--policy", "reactive")
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "8"); code != 0 { // 08:00 … 09:10
		t.Fatal(stderr)
	}
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	// Without a terminal and without --yes: the list, with the script the
	// successors would be submitted from, and nothing registered. The
	// state directory went with its tag.key: the jobs name another keeper
	// (the lost directory's), which the list says, with --take-over.
	out, stderr, code := e.run(t, "recover")
	if code != cmdutil.ExitUsage || !strings.Contains(out, id) || !strings.Contains(out, "would-recover") || !strings.Contains(out, script) ||
		!strings.Contains(stderr, "--yes") || !strings.Contains(out, "mirage recover --take-over "+id) {
		t.Fatalf("recover without --yes: exit %d\n%s%s", code, out, stderr)
	}
	if _, _, code := e.run(t, "status", id); code != cmdutil.ExitBadInput {
		t.Fatalf("status after an unconfirmed recover: exit %d, want %d (not registered)", code, cmdutil.ExitBadInput)
	}
	// On a terminal it asks: "n" registers nothing, "y" what was listed.
	e.f.IsTerminal = func(s any) bool { return s == e.f.In }
	e.f.In = strings.NewReader("n\n")
	if out, stderr, code := e.run(t, "recover"); code != 0 || !strings.Contains(stderr, "[y/N]") || !strings.Contains(stderr, "nothing registered") {
		t.Fatalf("recover answered n: exit %d\n%s%s", code, out, stderr)
	}
	if _, _, code := e.run(t, "status", id); code != cmdutil.ExitBadInput {
		t.Fatalf("status after recover answered n: exit %d, want %d", code, cmdutil.ExitBadInput)
	}
	e.f.In = strings.NewReader("y\n")
	out, stderr, code = e.run(t, "recover", "--take-over")
	if code != 0 || !strings.Contains(out, id+"  2     recovered  active") {
		t.Fatalf("recover answered y: exit %d\n%s%s", code, out, stderr)
	}
	out, _, code = e.run(t, "recover", "--json")
	if code != 0 || !strings.Contains(out, `"action": "known"`) {
		t.Errorf("second recover: %s", out)
	}
	out, _, _ = e.run(t, "status", id, "--json")
	var cj chainops.ChainJSON
	if err := json.Unmarshal([]byte(out), &cj); err != nil {
		t.Fatal(err)
	}
	if cj.Script != script || cj.Segments != 3 || cj.Policy != "reactive" || len(cj.SegmentList) != 2 ||
		cj.SegmentList[0].JobID != "sim-1" || cj.SegmentList[0].State != "TIMEOUT" || cj.SegmentList[1].JobID != "sim-2" || cj.SegmentList[1].State != "RUNNING" {
		t.Fatalf("recovered chain %+v", cj)
	}
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "12"); code != 0 { // 09:20 … 11:10
		t.Fatal(stderr)
	}
	out, _, _ = e.run(t, "status", id, "--json")
	if err := json.Unmarshal([]byte(out), &cj); err != nil || cj.State != "done" || len(cj.SegmentList) != 3 {
		t.Fatalf("after recovery: %v %+v", err, cj)
	}
	if n := len(e.s.History(chainT0)); n != 3 {
		t.Errorf("the simulator ran %d jobs, want 3", n)
	}
}

// TestCancelKeepsEndState: a segment that ended after the last daemon cycle
// (the store still holds it as running) keeps its real end state when the
// chain is cancelled; only what is still live is cancelled.
func TestCancelKeepsEndState(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "3")
	e.s.Run(chainT0.Add(10 * time.Minute))
	if _, stderr, code := e.run(t, "daemon", "--once"); code != 0 { // the store sees segment 0 running
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	if cj := e.statusJSON(t, id); cj.SegmentList[0].State != string(provisioner.StateRunning) {
		t.Fatalf("segment 0 is %s after the cycle, want RUNNING", cj.SegmentList[0].State)
	}
	e.s.Run(chainT0.Add(2 * time.Hour)) // segment 0 runs out its 55 minutes; no daemon cycle sees it
	hist := e.s.History(chainT0)
	if len(hist) != 1 || !hist[0].State.Finished() || hist[0].State == provisioner.StateCancelled {
		t.Fatalf("simulator history: %+v", hist)
	}
	truth := hist[0]
	out, stderr, code := e.run(t, "cancel", id)
	if code != 0 || !strings.Contains(out, "job "+truth.ID+" (segment 0) had already ended: "+string(truth.State)) {
		t.Fatalf("cancel: exit %d %q %q", code, out, stderr)
	}
	cj := e.statusJSON(t, id)
	if cj.State != string(provisioner.ChainCancelled) || cj.SegmentList[0].State != string(truth.State) {
		t.Errorf("after cancel: chain %s, segment 0 %s; want cancelled and %s", cj.State, cj.SegmentList[0].State, truth.State)
	}
	if h := e.s.History(chainT0); len(h) != 1 || h[0].State != truth.State {
		t.Errorf("the backend's record changed: %+v", h)
	}
}

// TestRecoverUnknownChain: recover of a chain nobody knows says so and
// exits 3, like status, log and cancel of an unknown chain.
func TestRecoverUnknownChain(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	known := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "2")
	out, stderr, code := e.run(t, "recover", "c-nope", known)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "c-nope: chain not found") || !strings.Contains(out, "not-found") ||
		!strings.Contains(out, known) || strings.Contains(stderr, known) {
		t.Errorf("recover c-nope %s: exit %d, out %q, err %q", known, code, out, stderr)
	}
}

// TestStatusHidesOldEndedChains: a chain that ended more than 7 days ago
// leaves status's list (which says how many it left out) unless --all;
// active chains stay whatever their age.
func TestStatusHidesOldEndedChains(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	old := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "2")
	if _, stderr, code := e.run(t, "cancel", old); code != 0 {
		t.Fatalf("cancel: exit %d: %s", code, stderr)
	}
	running := e.submitChain(t, e.script(t, "y.sbatch", "-t 55"), "--until-done")
	ids := func(args ...string) (string, string) {
		out, stderr, code := e.run(t, append([]string{"status"}, args...)...)
		if code != 0 {
			t.Fatalf("status %v: exit %d: %s", args, code, stderr)
		}
		return out, stderr
	}
	if out, _ := ids(); !strings.Contains(out, old) || !strings.Contains(out, running) {
		t.Fatalf("status the same day lists both:\n%s", out)
	}
	e.f.Now = func() time.Time { return e.s.Now().Add(8 * 24 * time.Hour) }
	out, stderr := ids()
	if strings.Contains(out, old) || !strings.Contains(out, running) || !strings.Contains(stderr, "1 chain(s) ended more than 7 days ago not shown") {
		t.Errorf("status 8 days later: out %q, err %q", out, stderr)
	}
	if out, _ := ids("--all"); !strings.Contains(out, old) || !strings.Contains(out, running) {
		t.Errorf("status --all 8 days later:\n%s", out)
	}
	if out, _ := ids("--json"); strings.Contains(out, old) {
		t.Errorf("status --json 8 days later lists the old chain:\n%s", out)
	}
}

// TestRecoverChecksSpec: a specification read back from job comments goes
// through the checks of submit before the daemon may submit from it: a
// script others may now write, or one that has gone, makes the recovered
// chain failed (with the reason), not active.
func TestRecoverChecksSpec(t *testing.T) {
	t.Parallel()
	for name, spoil := range map[string]func(script string) error{
		"may be written by group or others": func(s string) error { return os.Chmod(s, 0o666) },
		"no such file or directory":         os.Remove,
	} {
		e := newChainEnv(t)
		script := e.script(t, "x.sbatch", "-t 55")
		id := e.submitChain(t, script, "--segments", "3", "--policy", "reactive")
		if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "3"); code != 0 {
			t.Fatal(stderr)
		}
		if err := os.RemoveAll(e.state); err != nil {
			t.Fatal(err)
		}
		if err := spoil(script); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := e.run(t, "recover", "--yes")
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "failed") {
			t.Fatalf("%s: recover: exit %d\n%s%s", name, code, out, stderr)
		}
		if cj := e.statusJSON(t, id); cj.State != string(provisioner.ChainFailed) || !strings.Contains(cj.Reason, "fails the checks of mirage submit") ||
			!strings.Contains(cj.Reason, name) {
			t.Errorf("%s: recovered chain %s (%s)", name, cj.State, cj.Reason)
		}
	}
}

// TestStatusWatch: --watch redraws from the database every interval until
// interrupted (exit 0); a chain submitted meanwhile shows in the next frame.
func TestStatusWatch(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	script := e.script(t, "x.sbatch", "-t 55")
	first := e.submitChain(t, script, "--segments", "2")
	var second string
	sleeps := 0
	e.f.Sleep = func(ctx context.Context, d time.Duration) error {
		sleeps++
		if d != 30*time.Second {
			t.Errorf("slept %v, want the --watch interval 30s", d)
		}
		if sleeps == 1 {
			second = e.submitChain(t, script, "--segments", "3", "--new")
			return nil
		}
		return context.Canceled // Ctrl-C
	}
	out, stderr, code := e.run(t, "status", "--watch", "30s")
	frames := strings.Split(out, "mirage status, ")
	if code != 0 || len(frames) != 3 || !strings.Contains(frames[1], first) || strings.Contains(frames[1], second) ||
		!strings.Contains(frames[2], first) || !strings.Contains(frames[2], second) {
		t.Fatalf("status --watch: exit %d, %d frames (want 2: the first chain, then both)\n%s%s", code, len(frames)-1, out, stderr)
	}
	if _, stderr, code := e.run(t, "status", "--watch", "30s", "--json"); code != cmdutil.ExitUsage {
		t.Errorf("--watch with --json: exit %d (%s), want %d", code, stderr, cmdutil.ExitUsage)
	}
}

func TestDaemonLoop(t *testing.T) {
	t.Parallel()
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	n := 0
	cycle := func(context.Context) error { n++; return nil }
	if err := daemonLoop(context.Background(), loopOptions{Interval: time.Minute, MaxCycles: 3, Sleep: sleep}, cycle); err != nil || n != 3 || len(slept) != 2 {
		t.Errorf("3 cycles: %v, ran %d, slept %v", err, n, slept)
	}
	errCycle := func(context.Context) error { return context.DeadlineExceeded }
	if err := daemonLoop(context.Background(), loopOptions{Once: true, Sleep: sleep}, errCycle); err != context.DeadlineExceeded {
		t.Errorf("once: %v, want the cycle's error", err)
	}
	stop := func(context.Context, time.Duration) error { return context.Canceled }
	n = 0
	if err := daemonLoop(context.Background(), loopOptions{Interval: time.Minute, Sleep: stop}, cycle); err != nil || n != 1 {
		t.Errorf("signalled: %v after %d cycles", err, n)
	}
}

// TestDaemonLead: --lead sets how long before its predecessor's limit the
// lead policy submits a successor (one decision cycle by default, 10 min).
// Segment 0 (limit 55 min) starts at 08:00 and reaches its limit at
// 08:55; the daemon decides every 10 minutes from 08:00. With the default
// lead, 08:50 is within 10 minutes of 08:55: segment 1 is submitted then.
// With --lead 2m, 08:50 is 5 minutes before the limit: it waits; at 09:00
// segment 0 has ended and segment 1 is submitted as its predecessor ended.
func TestDaemonLead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lead []string
		want string
	}{
		{nil, "2026-03-02T08:50:00Z"},
		{[]string{"--lead", "2m"}, "2026-03-02T09:00:00Z"},
	} {
		e := newChainEnv(t)
		id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "2", "--policy", "lead", "--", "-p", "batch")
		if _, stderr, code := e.run(t, append([]string{"daemon", "--interval", "10m", "--max-cycles", "8"}, tc.lead...)...); code != 0 {
			t.Fatalf("daemon %v: exit %d: %s", tc.lead, code, stderr)
		}
		out, _, _ := e.run(t, "status", id, "--json")
		var cj chainops.ChainJSON
		if err := json.Unmarshal([]byte(out), &cj); err != nil || len(cj.SegmentList) != 2 || cj.SegmentList[1].Submit == nil {
			t.Fatalf("daemon %v: status %v: %s", tc.lead, err, out)
		}
		if got := cj.SegmentList[1].Submit.UTC().Format(time.RFC3339); got != tc.want {
			t.Errorf("daemon %v: segment 1 submitted at %s, want %s", tc.lead, got, tc.want)
		}
	}
	e := newChainEnv(t)
	if _, stderr, code := e.run(t, "daemon", "--once", "--lead", "0s"); code != cmdutil.ExitUsage || !strings.Contains(stderr, "--lead 0s: want a positive duration") {
		t.Errorf("--lead 0s: exit %d: %s", code, stderr)
	}
}

// The daemon's soft heap limit: set in bytes from MiB, not at all when
// turned off or when GOMEMLIMIT already set one.
func TestApplyMemLimit(t *testing.T) {
	for _, tc := range []struct {
		mib     int
		env     string
		want    int64
		wantSet bool
	}{
		{192, "", 192 * 1024 * 1024, true},
		{1, "", 1024 * 1024, true},
		{0, "", -1, false},
		{192, "1GiB", -1, false},
	} {
		var set []int64
		got := applyMemLimit(tc.mib, func(k string) string {
			if k == "GOMEMLIMIT" {
				return tc.env
			}
			return ""
		}, func(n int64) int64 { set = append(set, n); return 0 })
		if got != tc.want || (len(set) == 1) != tc.wantSet || (tc.wantSet && set[0] != tc.want) {
			t.Errorf("applyMemLimit(%d, GOMEMLIMIT=%q) = %d, set %v; want %d (set: %v)", tc.mib, tc.env, got, set, tc.want, tc.wantSet)
		}
	}
}

// markingBackend is the simulator as a backend whose history keeps the
// words mirage cancel adds to an ended job's comment (Slurm: sacctmgr
// modify job), or refuses them with err.
type markingBackend struct {
	simBackend
	marks map[string]string
	err   error
}

func (b *markingBackend) MarkEnded(_ context.Context, id string, _ time.Time, mark string) error {
	if b.err != nil {
		return b.err
	}
	b.marks[id] = mark
	return nil
}

func (b *markingBackend) History(_ context.Context, since time.Time) ([]provisioner.Job, error) {
	jobs := b.Sim.History(since)
	for i := range jobs {
		if m, ok := b.marks[jobs[i].ID]; ok {
			jobs[i].Comment += " " + m
		}
	}
	return jobs, nil
}

// TestCancelBetweenSegmentsMarksLastJob (#50, low): a chain cancelled
// between segments (its last job ended by itself, no successor yet) left
// no trace in the backend, and recover after the loss of the state
// directory offered it as an active chain. mirage cancel now marks that
// last job (provisioner.EndMark) and recover registers the chain as
// cancelled; a mark the backend refuses is a warning, the chain cancelled
// all the same.
func TestCancelBetweenSegmentsMarksLastJob(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	mb := &markingBackend{simBackend: simBackend{e.s}, marks: map[string]string{}}
	e.f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return mb, nil }
	script := e.script(t, "x.sbatch", "-t 55")
	id := e.submitChain(t, script, "--segments", "3", "--policy", "reactive")
	e.s.Run(chainT0.Add(2 * time.Hour)) // segment 0 runs out its 55 minutes; no daemon cycle submits segment 1
	hist := e.s.History(chainT0)
	if len(hist) != 1 || hist[0].State != provisioner.StateTimeout {
		t.Fatalf("simulator history: %+v", hist)
	}
	last := hist[0].ID
	out, stderr, code := e.run(t, "cancel", id)
	if code != 0 || !strings.Contains(out, "job "+last+" (the chain's last) marked "+provisioner.EndMark) || mb.marks[last] != provisioner.EndMark {
		t.Fatalf("cancel: exit %d, marks %v\n%s%s", code, mb.marks, out, stderr)
	}
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = e.run(t, "recover", "--json", "--dry-run")
	var rec []chainops.Recovered
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 0 {
		t.Fatalf("recover --dry-run: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if len(rec) != 1 || rec[0].Chain != id || rec[0].State != string(provisioner.ChainCancelled) || !strings.Contains(rec[0].Note, "cancelled by mirage cancel") {
		t.Errorf("recover after the loss: %+v; want the chain as cancelled", rec)
	}

	// The backend refuses the mark: the chain is cancelled, with a warning.
	e2 := newChainEnv(t)
	mb2 := &markingBackend{simBackend: simBackend{e2.s}, marks: map[string]string{}, err: errors.New("sacctmgr: slurmdbd unreachable")}
	e2.f.Backend = func(*backendOptions) (provisioner.Cluster, error) { return mb2, nil }
	id2 := e2.submitChain(t, e2.script(t, "x.sbatch", "-t 55"), "--segments", "3", "--policy", "reactive")
	e2.s.Run(chainT0.Add(2 * time.Hour))
	out, stderr, code = e2.run(t, "cancel", id2)
	if code != 0 || !strings.Contains(out, "warning: the chain's last job could not be marked") || !strings.Contains(out, "slurmdbd unreachable") {
		t.Fatalf("cancel with the mark refused: exit %d\n%s%s", code, out, stderr)
	}
	if cj := e2.statusJSON(t, id2); cj.State != string(provisioner.ChainCancelled) {
		t.Errorf("chain %s after cancel, want cancelled", cj.State)
	}
}
