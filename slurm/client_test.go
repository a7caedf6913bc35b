package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/provisioner"
)

// call is one command the fake runner saw.
type call struct {
	name string
	args []string
	env  []string
}

// reply is what the fake runner answers.
type reply struct {
	out, stderr string
	err         error
	block       bool // wait until the context ends (a hung command)
}

// fakeRunner answers commands from a script of replies per command name
// (the last reply repeats) and records every call.
type fakeRunner struct {
	mu      sync.Mutex
	replies map[string][]reply
	calls   []call
}

func (f *fakeRunner) Run(ctx context.Context, name string, args, env []string) ([]byte, []byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, call{name, slices.Clone(args), slices.Clone(env)})
	rs := f.replies[name]
	var r reply
	switch len(rs) {
	case 0:
		f.mu.Unlock()
		return nil, nil, fmt.Errorf("fake: no reply for %s", name)
	case 1:
		r = rs[0]
	default:
		r, f.replies[name] = rs[0], rs[1:]
	}
	f.mu.Unlock()
	if r.block {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	return []byte(projectText(name, args, r.out)), []byte(r.stderr), r.err
}

// projectText lets the recorded full-layout text outputs (every field,
// names and comments included: squeue -O SqueueFormat, sacct -o
// SacctFields) answer the queries the Client really makes: it keeps the
// columns the query's -O/-o asks for, in its order, and only the lines of
// the user a --user=/-u names. Other outputs pass unchanged.
func projectText(name string, args []string, out string) string {
	var full []string
	var userCol string
	switch name {
	case "squeue":
		full, userCol = squeueFields, "UserName"
	case "sacct":
		full, userCol = SacctFields, "User"
	default:
		return out
	}
	var want []string
	user := ""
	for i, a := range args {
		switch {
		case (a == "-O" || a == "-o") && i+1 < len(args):
			for _, f := range strings.Split(args[i+1], ",") {
				f = strings.TrimSuffix(strings.TrimSuffix(f, Sep), ":0")
				want = append(want, f)
			}
		case strings.HasPrefix(a, "--user="):
			user = strings.TrimPrefix(a, "--user=")
		case a == "-u" && i+1 < len(args) && name == "sacct" && !strings.Contains(args[i+1], ","):
			user = args[i+1]
		}
	}
	if want == nil || slices.Equal(want, full) {
		return out
	}
	cols := newColumns(name, full, true)
	var b strings.Builder
	for _, l := range lines([]byte(out)) {
		f, ok := cols.split(l)
		if !ok {
			return out // not the full layout
		}
		if user != "" && cols.get(f, userCol) != user {
			continue
		}
		for k, w := range want {
			if k > 0 {
				b.WriteString(Sep)
			}
			b.WriteString(cols.get(f, w))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (f *fakeRunner) count(name string) int {
	n := 0
	for _, c := range f.calls {
		if c.name == name {
			n++
		}
	}
	return n
}

// fakeClock is a fixed clock whose After fires at once and records the waits.
type fakeClock struct {
	now   time.Time
	mu    sync.Mutex
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// exitErr is a non-zero exit as exec reports it.
var exitErr = &exec.ExitError{}

func newTestClient(t *testing.T, r *fakeRunner, mod func(*Config)) (*Client, *fakeClock) {
	t.Helper()
	clk := &fakeClock{now: time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)}
	cfg := Config{Runner: r, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{TZ: "Mars/Olympus"},
		{TZ: "Local"},
		{SacctFormat: "xml"},
		{SignalScope: "all"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Config()
	// Defaults documented on Config and RetryPolicy.
	if got.TZ != "UTC" || got.Timeout != 30*time.Second || got.Retry.Attempts != 3 ||
		got.Retry.Initial != time.Second || got.Retry.Max != 8*time.Second || got.SignalScope != SignalFull {
		t.Errorf("defaults = %+v", got)
	}
}

func TestRetryTransientQueryWithBackoff(t *testing.T) {
	down := reply{stderr: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n", err: exitErr}
	r := &fakeRunner{replies: map[string][]reply{"squeue": {down, down, down, down}}}
	c, clk := newTestClient(t, r, func(c *Config) {
		c.Retry = RetryPolicy{Attempts: 4, Initial: time.Second, Max: 3 * time.Second}
	})
	_, err := c.Jobs(context.Background(), JobFilter{})
	if !errors.Is(err, ErrControllerDown) || !errors.Is(err, provisioner.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrControllerDown wrapping ErrUnavailable", err)
	}
	if n := r.count("squeue"); n != 4 {
		t.Errorf("squeue ran %d times, want 4 (Attempts)", n)
	}
	// Waits double from Initial and stop at Max: 1 s, 2 s, then 4 s capped to 3 s.
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	if !slices.Equal(clk.waits, want) {
		t.Errorf("waits = %v, want %v", clk.waits, want)
	}
	if !strings.Contains(err.Error(), "after 4 attempts") || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Errorf("message %q lacks attempts or Slurm's words", err)
	}
}

func TestRetryRecovers(t *testing.T) {
	down := reply{stderr: "squeue: error: Socket timed out on send/recv operation", err: exitErr}
	ok := reply{out: readTestdata(t, "squeue-22.05.json")}
	r := &fakeRunner{replies: map[string][]reply{"squeue": {down, ok}}}
	c, clk := newTestClient(t, r, nil)
	jobs, err := c.Jobs(context.Background(), JobFilter{})
	if err != nil || len(jobs) == 0 {
		t.Fatalf("Jobs after one transient failure: %d jobs, %v", len(jobs), err)
	}
	if len(clk.waits) != 1 || clk.waits[0] != time.Second {
		t.Errorf("waits = %v, want one of 1 s", clk.waits)
	}
}

func TestNoRetryForPermanentFailures(t *testing.T) {
	cases := []struct {
		name string
		r    reply
		want error
	}{
		{"munge", reply{stderr: "squeue: error: Munge encode failed: Failed to access \"/run/munge/munge.socket.2\": No such file or directory\nsqueue: error: authentication: Socket communication error", err: exitErr}, ErrMungeDown},
		{"permission", reply{stderr: "squeue: error: Access/permission denied", err: exitErr}, ErrPermission},
		{"missing", reply{err: &exec.Error{Name: "squeue", Err: exec.ErrNotFound}}, ErrNotInstalled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{replies: map[string][]reply{"squeue": {tc.r}}}
			c, clk := newTestClient(t, r, nil)
			_, err := c.Jobs(context.Background(), JobFilter{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if n := r.count("squeue"); n != 1 || len(clk.waits) != 0 {
				t.Errorf("ran %d times with waits %v; permanent failures must not be retried", n, clk.waits)
			}
		})
	}
}

func TestPerCallTimeout(t *testing.T) {
	r := &fakeRunner{replies: map[string][]reply{"squeue": {{block: true}}}}
	c, _ := newTestClient(t, r, func(c *Config) {
		c.Timeout = time.Hour
		c.Timeouts = map[string]time.Duration{"squeue": 20 * time.Millisecond}
		c.Retry.Attempts = 2
	})
	start := time.Now()
	_, err := c.Jobs(context.Background(), JobFilter{})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, provisioner.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if r.count("squeue") != 2 {
		t.Errorf("a timed-out query runs again: got %d runs, want 2", r.count("squeue"))
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the per-command timeout of 20 ms was not applied")
	}
}

func TestCallerCancelStopsRetries(t *testing.T) {
	down := reply{stderr: "Unable to contact slurm controller (connect failure)", err: exitErr}
	r := &fakeRunner{replies: map[string][]reply{"squeue": {down}}}
	ctx, cancel := context.WithCancel(context.Background())
	clk := &blockingClock{}
	c, err := New(Config{Runner: r, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for !clk.waiting() {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = c.Jobs(ctx, JobFilter{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if r.count("squeue") != 1 {
		t.Errorf("ran %d times after cancel, want 1", r.count("squeue"))
	}
}

// blockingClock's After never fires.
type blockingClock struct {
	mu sync.Mutex
	w  bool
}

func (c *blockingClock) Now() time.Time { return time.Unix(0, 0) }
func (c *blockingClock) After(time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.w = true
	c.mu.Unlock()
	return make(chan time.Time)
}
func (c *blockingClock) waiting() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.w }

func TestSubmitRetriesOnlyWhenNothingWasSent(t *testing.T) {
	req := provisioner.SubmitRequest{Script: "/tmp/job.sh", Name: "seg"}
	cases := []struct {
		name      string
		replies   []reply
		wantRuns  int
		wantID    string
		wantErrIs error
		alsoIs    error // the error matches this too
		notIs     error // and never this
	}{
		{
			name: "connect failure is retried",
			replies: []reply{
				{stderr: "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", err: exitErr},
				{out: "42\n"},
			},
			wantRuns: 2, wantID: "42",
		},
		{
			// #50: sbatch never reached the controller, so nothing was
			// submitted: the engine gives the intent up at once. Before,
			// the error was only ErrControllerDown and the segment waited
			// the 2-minute submission grace for a job that cannot exist.
			name:      "connect failure past the retries is not submitted",
			replies:   []reply{{stderr: "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", err: exitErr}},
			wantRuns:  3, // the default Retry.Attempts
			wantErrIs: provisioner.ErrNotSubmitted,
			alsoIs:    ErrControllerDown,
		},
		{
			// The request may have reached slurmctld: a second sbatch could submit the segment twice.
			name:      "socket timeout is not retried",
			replies:   []reply{{stderr: "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation", err: exitErr}, {out: "43\n"}},
			wantRuns:  1,
			wantErrIs: ErrControllerDown,
			notIs:     provisioner.ErrNotSubmitted,
		},
		{
			name:      "per-call timeout is not retried",
			replies:   []reply{{block: true}, {out: "44\n"}},
			wantRuns:  1,
			wantErrIs: ErrTimeout,
		},
		{
			name:      "rejection is not retried",
			replies:   []reply{{stderr: "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)\n", err: exitErr}},
			wantRuns:  1,
			wantErrIs: provisioner.ErrRejected,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{replies: map[string][]reply{"sbatch": tc.replies}}
			c, _ := newTestClient(t, r, func(c *Config) { c.Timeouts = map[string]time.Duration{"sbatch": 20 * time.Millisecond} })
			id, err := c.Submit(context.Background(), req)
			if r.count("sbatch") != tc.wantRuns {
				t.Errorf("sbatch ran %d times, want %d", r.count("sbatch"), tc.wantRuns)
			}
			if tc.wantErrIs != nil {
				if !errors.Is(err, tc.wantErrIs) || tc.alsoIs != nil && !errors.Is(err, tc.alsoIs) || tc.notIs != nil && errors.Is(err, tc.notIs) {
					t.Fatalf("err = %v, want %v (and %v, never %v)", err, tc.wantErrIs, tc.alsoIs, tc.notIs)
				}
				return
			}
			if err != nil || id != tc.wantID {
				t.Fatalf("Submit = %q, %v; want %q", id, err, tc.wantID)
			}
		})
	}
}

func TestSubmitRejectedCarriesSlurmReason(t *testing.T) {
	stderr := readTestdata(t, "sbatch-reject-account-22.05.txt")
	r := &fakeRunner{replies: map[string][]reply{"sbatch": {{stderr: stderr, err: exitErr}}}}
	c, _ := newTestClient(t, r, nil)
	_, err := c.Submit(context.Background(), provisioner.SubmitRequest{Script: "/x.sh", Account: "nosuchaccount"})
	var rej *RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("err = %v (%T), want *RejectedError", err, err)
	}
	if rej.Reason != "Invalid account or account/partition combination specified" {
		t.Errorf("reason = %q", rej.Reason)
	}
}

// Issue #50: with a ScriptDir, sbatch runs only on an intact private copy
// there; anything else (the original's path, a copy that changed) is
// refused before any command runs, as not submitted, not as a rejection.
func TestSubmitOnlyFromPrivateCopies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scripts")
	copyPath, _, err := safefile.Freeze(dir, []byte("#!/bin/bash\necho hi\n"))
	if err != nil {
		t.Fatal(err)
	}
	original := filepath.Join(t.TempDir(), "train.sbatch")
	if err := os.WriteFile(original, []byte("#!/bin/bash\necho hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{replies: map[string][]reply{"sbatch": {{out: "42\n"}}}}
	c, _ := newTestClient(t, r, func(cfg *Config) { cfg.ScriptDir = dir })
	ctx := context.Background()
	if id, err := c.Submit(ctx, provisioner.SubmitRequest{Script: copyPath}); err != nil || id != "42" {
		t.Fatalf("Submit from the copy: %q, %v", id, err)
	}
	if got := r.calls[0].args[len(r.calls[0].args)-1]; got != copyPath {
		t.Errorf("sbatch ran on %s, want the copy %s", got, copyPath)
	}
	if err := os.WriteFile(copyPath, []byte("#!/bin/bash\necho changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{original, copyPath} {
		_, err := c.Submit(ctx, provisioner.SubmitRequest{Script: script})
		if !errors.Is(err, ErrScriptRefused) || !errors.Is(err, provisioner.ErrNotSubmitted) || errors.Is(err, provisioner.ErrRejected) {
			t.Errorf("Submit(%s): %v; want ErrScriptRefused, not submitted", script, err)
		}
	}
	if len(r.calls) != 1 {
		t.Errorf("%d commands ran, want the one sbatch from the intact copy", len(r.calls))
	}
}

func TestSubmitBadRequestRunsNothing(t *testing.T) {
	r := &fakeRunner{}
	c, _ := newTestClient(t, r, nil)
	_, err := c.Submit(context.Background(), provisioner.SubmitRequest{Script: "/x.sh", Env: map[string]string{"SBATCH_PARTITION": "x"}})
	if !errors.Is(err, ErrBadRequest) || !errors.Is(err, provisioner.ErrRejected) {
		t.Fatalf("err = %v, want ErrBadRequest", err)
	}
	if len(r.calls) != 0 {
		t.Errorf("ran %v for a refused request", r.calls)
	}
}

func TestCancelAndSignal(t *testing.T) {
	r := &fakeRunner{replies: map[string][]reply{"scancel": {
		{stderr: "scancel: Terminating job 5"},
		{stderr: "scancel: Terminating job 5\nscancel: error: Kill job error on job id 5: Job/step already completing or completed"}, // exit 0
		{},
		{stderr: "scancel: error: Kill job error on job id 5: Job/step already completing or completed", err: exitErr},
		{stderr: "scancel: error: Kill job error on job id 99999: Invalid job id specified"}, // exit 0, as scancel does
	}}}
	c, _ := newTestClient(t, r, nil)
	ctx := context.Background()
	if err := c.Cancel(ctx, "5"); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, "5"); err != nil {
		t.Errorf("cancelling a finished job: %v, want nil", err)
	}
	if err := c.Signal(ctx, "7_3", "usr1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(ctx, "5", "USR1"); !errors.Is(err, ErrJobFinished) || !errors.Is(err, provisioner.ErrNotFound) {
		t.Errorf("signal to a finished job: %v, want ErrJobFinished", err)
	}
	if err := c.Cancel(ctx, "99999"); !errors.Is(err, provisioner.ErrNotFound) {
		t.Errorf("cancel of an unknown job: %v, want ErrNotFound", err)
	}
	want := [][]string{{"-v", "5"}, {"-v", "5"}, {"--signal=USR1", "--full", "7_3"}, {"--signal=USR1", "--full", "5"}, {"-v", "99999"}}
	for i, w := range want {
		if !slices.Equal(r.calls[i].args, w) {
			t.Errorf("call %d: scancel %q, want %q", i, r.calls[i].args, w)
		}
	}
	for _, bad := range []string{"--user=root", "-1", "", "12;rm", "1 2"} {
		if err := c.Cancel(ctx, bad); err == nil {
			t.Errorf("Cancel(%q) accepted a malformed id", bad)
		}
	}
	for _, bad := range []string{"-9", "USR1 --full", "", "$(x)"} {
		if err := c.Signal(ctx, "5", bad); err == nil {
			t.Errorf("Signal(%q) accepted a malformed signal", bad)
		}
	}
	if len(r.calls) != 5 {
		t.Errorf("malformed ids or signals reached scancel: %v", r.calls[5:])
	}
}

func TestSignalScopes(t *testing.T) {
	for scope, want := range map[string][]string{
		SignalBatch: {"--signal=TERM", "--batch", "9"},
		SignalSteps: {"--signal=TERM", "9"},
	} {
		r := &fakeRunner{replies: map[string][]reply{"scancel": {{}}}}
		c, _ := newTestClient(t, r, func(c *Config) { c.SignalScope = scope })
		if err := c.Signal(context.Background(), "9", "TERM"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.calls[0].args, want) {
			t.Errorf("scope %s: scancel %q, want %q", scope, r.calls[0].args, want)
		}
	}
}

func TestJSONFallsBackToText(t *testing.T) {
	noJSON := reply{stderr: "squeue: unrecognized option '--json'\nTry \"squeue --help\" for more information", err: exitErr}
	text := reply{out: readTestdata(t, "squeue-22.05.txt")}
	r := &fakeRunner{replies: map[string][]reply{"squeue": {noJSON, text, text}}}
	c, _ := newTestClient(t, r, nil)
	for i := 0; i < 2; i++ {
		jobs, err := c.Jobs(context.Background(), JobFilter{})
		if err != nil || len(jobs) == 0 {
			t.Fatalf("round %d: %d jobs, %v", i, len(jobs), err)
		}
	}
	// First round: --json, then text (every job, then the user's own
	// names and comments); second round: text straight away.
	if r.count("squeue") != 5 || r.calls[0].args[0] != "--json" || r.calls[3].args[0] == "--json" {
		t.Errorf("calls = %v", r.calls)
	}
}

func TestUnknownSchemaFallsBackToText(t *testing.T) {
	future := reply{out: `{"meta":{"plugin":{"data_parser":"data_parser/v0.0.99"},"slurm":{"version":{"major":"31","minor":"05","micro":"0"},"release":"31.05.0"}},"queue":[]}`}
	text := reply{out: readTestdata(t, "squeue-22.05.txt")}
	r := &fakeRunner{replies: map[string][]reply{"squeue": {future, text}}}
	var logs strings.Builder
	c, _ := newTestClient(t, r, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "31.05.0") || !strings.Contains(logs.String(), "falling back to text") {
		t.Errorf("the fallback does not name the version: %s", logs.String())
	}
}

func TestSnapshotFiltersUsersInGo(t *testing.T) {
	// 22.05's squeue --json ignores -u: the Client must filter. The recorded
	// document has only root's jobs, so asking for "alice" must leave none.
	r := &fakeRunner{replies: map[string][]reply{
		"squeue": {{out: readTestdata(t, "squeue-22.05.json")}},
		"sinfo":  {{out: readTestdata(t, "sinfo-22.05.json")}},
	}}
	c, clk := newTestClient(t, r, func(c *Config) { c.Users = []string{"alice"} })
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Jobs) != 0 || len(snap.Nodes) != 4 || !snap.Time.Equal(clk.now) {
		t.Errorf("snapshot: %d jobs, %d nodes, time %v", len(snap.Jobs), len(snap.Nodes), snap.Time)
	}
	c2, _ := newTestClient(t, r, func(c *Config) { c.Users = []string{"root"} })
	snap, err = c2.Snapshot(context.Background())
	if err != nil || len(snap.Jobs) == 0 {
		t.Fatalf("root's jobs: %d, %v", len(snap.Jobs), err)
	}
}

func TestAccountingArgsAndDegrade(t *testing.T) {
	r := &fakeRunner{replies: map[string][]reply{
		"sinfo": {{out: "slurm-wlm 22.05.8\n"}},
		"sacct": {
			{out: readTestdata(t, "sacct-22.05.txt")}, // every job
			{out: readTestdata(t, "sacct-22.05.txt")}, // the user's own names and comments
			{stderr: readTestdata(t, "fail-slurmdbd-sacct-22.05.txt"), err: exitErr},
		},
	}}
	c, clk := newTestClient(t, r, func(c *Config) { c.TZ = "Europe/Berlin"; c.Retry.Attempts = 2 })
	since := clk.now.Add(-2 * time.Hour)
	jobs, err := c.History(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) == 0 {
		t.Fatal("no history")
	}
	args := r.calls[1].args
	// 22.05: --parsable2 (its JSON loses exit codes); times in the configured
	// zone: 06:00 UTC is 07:00 in Berlin in November (CET, UTC+1), so -S is
	// 04:00 UTC = 05:00 CET and -E 07:00 CET.
	for _, w := range []string{"--allocations", "--allusers", "--parsable2", "-S", "2026-11-23T05:00:00", "-E", "2026-11-23T07:00:00"} {
		if !slices.Contains(args, w) {
			t.Errorf("sacct args %q lack %q", args, w)
		}
	}
	if slices.Contains(args, "--json") {
		t.Errorf("22.05 must not use sacct --json: %q", args)
	}
	_, err = c.History(context.Background(), since)
	if !errors.Is(err, provisioner.ErrNoAccounting) {
		t.Fatalf("slurmdbd down: err = %v, want ErrNoAccounting", err)
	}
	if n := r.count("sacct"); n != 4 {
		t.Errorf("sacct ran %d times, want 4 (2 queries + 2 attempts with slurmdbd down)", n)
	}
	if r.count("sinfo") != 1 {
		t.Errorf("the version is asked once, got %d", r.count("sinfo"))
	}
}

func TestAccountingUsesJSONOnLaterReleases(t *testing.T) {
	r := &fakeRunner{replies: map[string][]reply{
		"sinfo": {{out: "slurm 24.05.3\n"}},
		"sacct": {{out: readTestdata(t, "sacct-24.05.json")}},
	}}
	c, clk := newTestClient(t, r, nil)
	jobs, err := c.Accounting(context.Background(), AccountingQuery{Start: clk.now.Add(-time.Hour)})
	if err != nil || len(jobs) == 0 {
		t.Fatalf("%d jobs, %v", len(jobs), err)
	}
	if !slices.Contains(r.calls[1].args, "--json") {
		t.Errorf("24.05: want sacct --json, got %q", r.calls[1].args)
	}
}

func TestAccountingRefusesBadWindow(t *testing.T) {
	c, clk := newTestClient(t, &fakeRunner{}, nil)
	if _, err := c.Accounting(context.Background(), AccountingQuery{Start: clk.now, End: clk.now.Add(-time.Minute)}); err == nil {
		t.Error("accepted an empty window")
	}
	if _, err := c.Accounting(context.Background(), AccountingQuery{}); err == nil {
		t.Error("accepted a window without a start (sacct would silently use midnight)")
	}
}

func TestNotInstalled(t *testing.T) {
	// The real ExecRunner with a PATH holding no Slurm commands.
	c, err := New(Config{Path: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Snapshot(context.Background())
	if !errors.Is(err, ErrNotInstalled) || !errors.Is(err, provisioner.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "slurm-client") {
		t.Errorf("message %q does not say what to install", err)
	}
}

func TestExecRunnerPassesArgumentsVerbatim(t *testing.T) {
	// /bin/echo through the real runner: one argument stays one argument and
	// nothing in it is interpreted; SLURM_CONF, TZ and SLURM_TIME_FORMAT are
	// set, SQUEUE_FORMAT is removed.
	t.Setenv("SQUEUE_FORMAT", "%i")
	r := &ExecRunner{SlurmConf: "/x/slurm.conf", TZ: "Europe/Berlin"}
	arg := "$(touch pwned) `id`; echo \"q\" 'x' | cat"
	out, _, err := r.Run(context.Background(), "/bin/echo", []string{arg}, nil)
	if err != nil || strings.TrimSpace(string(out)) != arg {
		t.Fatalf("echo printed %q, %v", out, err)
	}
	out, _, err = r.Run(context.Background(), "/usr/bin/env", nil, []string{"MIRAGE_X=a,b c"})
	if err != nil {
		t.Fatal(err)
	}
	env := string(out)
	for _, want := range []string{"SLURM_CONF=/x/slurm.conf\n", "TZ=Europe/Berlin\n", "SLURM_TIME_FORMAT=standard\n", "MIRAGE_X=a,b c\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %q", want)
		}
	}
	if strings.Contains(env, "SQUEUE_FORMAT") {
		t.Error("SQUEUE_FORMAT reached the command")
	}
	if m, _ := filepath.Glob("pwned*"); len(m) > 0 {
		t.Errorf("something ran: %v", m)
	}
}

// TestUnpinRace: `scontrol update ReqNodeList=` on a job that started
// meanwhile is refused (on a running job the field is a resize; 22.05
// says "Invalid node name specified"): Unpin looks the job up and, as it
// is no longer pending, reports success. A job still pending keeps the
// error; one squeue no longer holds is ErrNotFound.
func TestUnpinRace(t *testing.T) {
	refused := reply{stderr: "scontrol: Invalid node name specified for job %s", err: exitErr}
	for _, c := range []struct {
		id       string
		wantErr  bool
		notFound bool
	}{
		{"92", false, false}, // RUNNING in the testdata
		{"94", true, false},  // PENDING: the refusal stands
		{"555", true, true},  // not in squeue
	} {
		rf := refused
		rf.stderr = fmt.Sprintf(rf.stderr, c.id)
		r := &fakeRunner{replies: map[string][]reply{"scontrol": {rf}, "squeue": {{out: readTestdata(t, "squeue-22.05.json")}}}}
		cl, _ := newTestClient(t, r, nil)
		err := cl.Unpin(context.Background(), c.id)
		if (err != nil) != c.wantErr || errors.Is(err, provisioner.ErrNotFound) != c.notFound {
			t.Errorf("job %s: Unpin = %v, want error %t (not found %t)", c.id, err, c.wantErr, c.notFound)
		}
	}
}

// budgetRunner is a fakeRunner whose --json answers honour the per-call
// output limit (WithOutputLimit) as ExecRunner does: an answer longer than
// the limit is an *OutputLimitError.
type budgetRunner struct{ *fakeRunner }

func (b budgetRunner) Run(ctx context.Context, name string, args, env []string) ([]byte, []byte, error) {
	out, errb, err := b.fakeRunner.Run(ctx, name, args, env)
	if n := outputLimit(ctx); n > 0 && int64(len(out)) > n {
		return nil, errb, &OutputLimitError{Cmd: name, Limit: n}
	}
	return out, errb, err
}

// Issue #50: a cluster whose squeue --json answer is over the JSON budget
// (1 GB at 100,000 queued jobs of 24.11) is read in the compact text
// layout from then on, every job still there; sacct's every-user history
// the same.
func TestJSONBudgetSwitchesToCompactText(t *testing.T) {
	jsonDoc := reply{out: readTestdata(t, "squeue-24.11.json")}
	txt := readTestdata(t, "squeue-24.11.txt")
	r := &fakeRunner{replies: map[string][]reply{"squeue": {jsonDoc, {out: txt}}}}
	var logs strings.Builder
	c, _ := newTestClient(t, r, func(c *Config) {
		c.Runner = budgetRunner{r}
		c.JSONBudget = int64(len(jsonDoc.out) - 1) // one byte short
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	// The job ids the text fixture lists (its first column, array tasks
	// as recorded), worked out here from the file itself.
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(txt), "\n") {
		want = append(want, strings.SplitN(l, Sep, 2)[0])
	}
	slices.Sort(want)
	for round := 0; round < 2; round++ {
		jobs, err := c.Jobs(context.Background(), JobFilter{})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var got []string
		for _, j := range jobs {
			got = append(got, j.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: jobs %v, want the text fixture's %v", round, got, want)
		}
	}
	var asked int
	for _, cl := range r.calls {
		if slices.Contains(cl.args, "--json") {
			asked++
		}
	}
	if asked != 1 || !strings.Contains(logs.String(), "compact text layout") {
		t.Errorf("--json asked %d times (want once), log %q", asked, logs.String())
	}

	// Within the budget JSON stays: the same document with the budget at
	// its size exactly.
	r2 := &fakeRunner{replies: map[string][]reply{"squeue": {jsonDoc}}}
	c2, _ := newTestClient(t, r2, func(c *Config) { c.Runner, c.JSONBudget = budgetRunner{r2}, int64(len(jsonDoc.out)) })
	if _, err := c2.Jobs(context.Background(), JobFilter{}); err != nil || len(r2.calls) != 1 || !slices.Contains(r2.calls[0].args, "--json") {
		t.Fatalf("within the budget: %v, calls %v", err, r2.calls)
	}

	// sacct: every user's history over the budget is read as text.
	sj := reply{out: readTestdata(t, "sacct-24.11.json")}
	st := reply{out: readTestdata(t, "sacct-24.11.txt")}
	r3 := &fakeRunner{replies: map[string][]reply{"sacct": {sj, st}}}
	c3, clk := newTestClient(t, r3, func(c *Config) { c.Runner, c.SacctFormat, c.JSONBudget = budgetRunner{r3}, FormatJSON, 1024 })
	jobs, err := c3.Accounting(context.Background(), AccountingQuery{Start: clk.now.Add(-24 * time.Hour)})
	if err != nil || len(jobs) == 0 {
		t.Fatalf("sacct over the budget: %d jobs, %v", len(jobs), err)
	}
	if n := len(r3.calls); n < 2 || !slices.Contains(r3.calls[0].args, "--json") || slices.Contains(r3.calls[1].args, "--json") {
		t.Errorf("sacct calls %v: want --json once, then text", r3.calls)
	}
}

func TestSlurmView(t *testing.T) {
	for view, want := range map[string]Config{
		"":          {},
		ViewAuto:    {},
		ViewCompact: {TextOnly: true, SacctFormat: FormatText},
		ViewJSON:    {JSONBudget: -1},
	} {
		var got Config
		if err := viewConfig(&got, view); err != nil || got.TextOnly != want.TextOnly || got.SacctFormat != want.SacctFormat || got.JSONBudget != want.JSONBudget {
			t.Errorf("view %q: %+v, %v", view, got, err)
		}
	}
	if err := viewConfig(&Config{}, "xml"); err == nil || !strings.Contains(err.Error(), "want auto, compact or json") {
		t.Errorf("view xml: %v", err)
	}
}

// permute moves each job to its sorted place; the expected order is the
// index itself, applied by copying.
func TestPermute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 1000} {
		jobs := make([]provisioner.Job, n)
		for i := range jobs {
			jobs[i].ID = strconv.Itoa(i)
		}
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(i)
		}
		rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		want := make([]string, n)
		for i, k := range idx {
			want[i] = jobs[k].ID
		}
		permute(jobs, idx)
		for i := range jobs {
			if jobs[i].ID != want[i] {
				t.Fatalf("n=%d: position %d holds job %s, want %s", n, i, jobs[i].ID, want[i])
			}
		}
	}
}

// A streamed read spools its lines and parses them once their number is
// known: jobs come back whole and in order across chunks (one line longer
// than a chunk), a bad line is skipped under its own line number, and blank
// lines are not counted.
func TestRowParserSpool(t *testing.T) {
	p := newRowParser(time.UTC, sacctSafeCols, func(_ *rowParser, f []string) (provisioner.Job, bool, error) {
		if f[1] == "bad" {
			return provisioner.Job{}, false, errors.New("bad row")
		}
		return provisioner.Job{ID: f[0], Name: f[1]}, true, nil
	}, 0)
	rest := strings.Repeat(Sep, len(sacctSafeFields)-2)
	long := strings.Repeat("x", spoolChunk+10)
	var want []string
	n := 0
	for size := 0; size < 3*spoolChunk; n++ {
		name := "n"
		switch n {
		case 7:
			name = "bad"
		case 1000:
			name = long
		}
		l := strconv.Itoa(n) + Sep + name + rest
		size += len(l) + 1
		p.line([]byte(l))
		if n%500 == 0 {
			p.line([]byte("  \r"))
		}
		if name != "bad" {
			want = append(want, strconv.Itoa(n))
		}
	}
	jobs := p.jobs()
	if len(jobs) != len(want) || len(p.skipped) != 1 || p.n != n {
		t.Fatalf("%d jobs, %d skipped, %d lines; want %d, 1, %d", len(jobs), len(p.skipped), p.n, len(want), n)
	}
	if sk := p.skipped[0]; sk.Line != 8 || sk.ID != "7" {
		t.Errorf("skipped line %d (job %q), want line 8 (job 7)", sk.Line, sk.ID)
	}
	for i, j := range jobs {
		if j.ID != want[i] {
			t.Fatalf("job %d is %s, want %s", i, j.ID, want[i])
		}
	}
	if jobs[999].Name != long {
		t.Errorf("the line longer than a chunk came back as a name of %d bytes", len(jobs[999].Name))
	}
}
