package state

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 123456789, time.UTC)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testChain() provisioner.Chain {
	return provisioner.Chain{ID: "c-1", Name: "train", Script: "/home/u/t.sbatch", Args: []string{"--mem=4G", "--qos=low"},
		Policy: "lead", Segments: 3, MaxRetries: 2, Account: "vision", Partition: "gpu", TimeLimit: 90 * time.Minute,
		Nodes: 2, GPUs: 8, State: provisioner.ChainActive, Created: t0}
}

func TestOpenCreatesPrivateFilesAndMigrates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "mirage")
	s := open(t, dir)
	ctx := context.Background()
	if v, err := s.Version(ctx); err != nil || v != SchemaVersion() || v != 10 {
		t.Fatalf("version %d, %v; want 10", v, err)
	}
	c := testChain()
	if err := s.PutChain(ctx, &c); err != nil { // a write creates the WAL files
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, DBName): 0o600, filepath.Join(dir, DBName+"-wal"): 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q, %v", mode, err)
	}
	s.Close()
	// Reopening applies nothing and keeps the data.
	s2 := open(t, dir)
	var n int
	if err := s2.db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&n); err != nil || n != SchemaVersion() { // one row per migration
		t.Errorf("schema_version rows %d, %v", n, err)
	}
	if got, err := s2.Chain(ctx, "c-1"); err != nil || got.Name != "train" {
		t.Errorf("after reopen: %+v, %v", got, err)
	}
}

func TestOpenTightensMode(t *testing.T) {
	dir := t.TempDir()
	open(t, dir).Close()
	p := filepath.Join(dir, DBName)
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	open(t, dir)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after reopen, want 0600", fi.Mode().Perm())
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	c := testChain()
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Chain(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != c.Name || got.Script != c.Script || len(got.Args) != 2 || got.Args[1] != "--qos=low" || got.Policy != c.Policy ||
		got.Segments != 3 || got.MaxRetries != 2 || got.Account != "vision" || got.Partition != "gpu" || got.TimeLimit != 90*time.Minute ||
		got.Nodes != 2 || got.GPUs != 8 || got.State != provisioner.ChainActive || !got.Created.Equal(t0) || got.WorkDir != "" || got.Env != nil {
		t.Errorf("chain round trip: %+v", got)
	}
	// The directory and environment submit records (schema 3), and the
	// models directory (schema 4).
	c.WorkDir, c.Env = "/scratch/u/run 1", map[string]string{"PATH": "/opt/mirage/bin:/usr/bin", "MIRAGE_BIN": "/opt/mirage/bin/mirage"}
	c.Models = "/home/u/.local/share/mirage/models"
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chain(ctx, c.ID); err != nil || got.WorkDir != "/scratch/u/run 1" || len(got.Env) != 2 || got.Models != c.Models ||
		got.Env["PATH"] != "/opt/mirage/bin:/usr/bin" || got.Env["MIRAGE_BIN"] != "/opt/mirage/bin/mirage" {
		t.Errorf("chain with work dir and env: %+v, %v", got, err)
	}
	// The private copy of the script, its hash and what the original
	// became (schema 7).
	c.ScriptCopy, c.ScriptHash, c.ScriptSeen = "/home/u/.local/state/mirage/scripts/sha256-ab", "sha256:ab", "deleted"
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chain(ctx, c.ID); err != nil || got.ScriptCopy != c.ScriptCopy || got.ScriptHash != "sha256:ab" || got.ScriptSeen != "deleted" ||
		got.SubmitScript() != c.ScriptCopy {
		t.Errorf("chain with a script copy: %+v, %v", got, err)
	}
	// Why mirage chose the policy (schema 9).
	c.PolicyWhy = "site class age0: 0.62× reactive's mean |gap|"
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chain(ctx, c.ID); err != nil || got.PolicyWhy != c.PolicyWhy {
		t.Errorf("chain with a policy reason: %+v, %v", got, err)
	}
	// The workload and explicit cost weights (schema 5).
	c.Workload, c.Cost = "custom", &provisioner.GapCost{InterruptionPerHour: 100, OverlapPerHour: 4, OverlapBudget: 90 * time.Minute}
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chain(ctx, c.ID); err != nil || got.Workload != "custom" || got.Cost == nil || *got.Cost != *c.Cost || got.CostOf() != *c.Cost {
		t.Errorf("chain with a workload and cost: %+v, %v", got, err)
	}
	c.Workload, c.Cost = provisioner.WorkloadService, nil
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chain(ctx, c.ID); err != nil || got.Workload != provisioner.WorkloadService || got.Cost != nil || got.CostOf().InterruptionPerHour != 600 {
		t.Errorf("chain of the service workload: %+v, %v", got, err)
	}
	// The --signal lead (schema 8).
	c.SignalLead = 40 * time.Second
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chain(ctx, c.ID); err != nil || got.SignalLead != 40*time.Second {
		t.Errorf("chain with a signal lead: %+v, %v", got, err)
	}
	// Its keeper and cluster (schema 10).
	c.Keeper, c.Cluster = "0123456789abcdef", "ls6"
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Chain(ctx, c.ID); err != nil || got.Keeper != "0123456789abcdef" || got.Cluster != "ls6" {
		t.Errorf("chain with a keeper and a cluster: %+v, %v", got, err)
	}
	c.State, c.Reason = provisioner.ChainDone, "all 3 segments ran"
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if act, _ := s.Chains(ctx, true); len(act) != 0 {
		t.Errorf("active chains %d after done", len(act))
	}
	if all, _ := s.Chains(ctx, false); len(all) != 1 || all[0].Reason != c.Reason {
		t.Errorf("chains %+v", all)
	}
	if _, err := s.Chain(ctx, "nope"); !errors.Is(err, provisioner.ErrChainNotFound) {
		t.Errorf("unknown chain: %v", err)
	}
	segs := []provisioner.Segment{
		{ChainID: c.ID, Index: 1, Attempt: 0, JobID: "12", State: provisioner.StatePending, Submit: t0, Pinned: "gpu[01-02],gpu07"},
		{ChainID: c.ID, Index: 0, Attempt: 0, JobID: "11", State: provisioner.StateTimeout, Submit: t0, Start: t0, End: t0.Add(time.Hour), ExitCode: 0},
	}
	for i := range segs {
		if err := s.PutSegment(ctx, &segs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if back, _ := s.Segments(ctx, c.ID); len(back) != 2 || back[1].Pinned != "gpu[01-02],gpu07" || back[1].Done {
		t.Errorf("pinned segment read back as %+v", back)
	}
	// A segment whose job ran mirage done (schema 8).
	segs[0].Done = true
	if err := s.PutSegment(ctx, &segs[0]); err != nil {
		t.Fatal(err)
	}
	if back, _ := s.Segments(ctx, c.ID); len(back) != 2 || !back[1].Done || back[0].Done {
		t.Errorf("segment marked done read back as %+v", back)
	}
	segs[0].Done = false
	segs[0].State, segs[0].Start, segs[0].End, segs[0].ExitCode, segs[0].Note, segs[0].Pinned = provisioner.StateFailed, t0.Add(time.Minute), t0.Add(2*time.Hour), 3, "oom", ""
	if err := s.PutSegment(ctx, &segs[0]); err != nil {
		t.Fatal(err)
	}
	back, _ := s.Segments(ctx, c.ID)
	if len(back) != 2 || back[0].Index != 0 || back[1].State != provisioner.StateFailed || back[1].ExitCode != 3 || back[1].Note != "oom" || back[1].Pinned != "" ||
		!back[1].End.Equal(t0.Add(2*time.Hour)) || !back[0].End.Equal(t0.Add(time.Hour)) || !back[1].Start.Equal(t0.Add(time.Minute)) {
		t.Errorf("segments %+v", back)
	}
	d := provisioner.DecisionRecord{Time: t0, ChainID: c.ID, Segment: 2, Policy: "lead", Action: provisioner.Wait, Reason: "r", Score: -1.5, Features: "obs:1", JobID: "", Error: "", Count: 1}
	if err := s.Record(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.Decisions(ctx, c.ID); len(ds) != 1 || ds[0] != d {
		t.Errorf("decisions %+v", ds)
	}
	e := provisioner.Event{Time: t0, ChainID: c.ID, Segment: 1, Attempt: 0, JobID: "12", Kind: provisioner.EventGap, Detail: "x", Value: 60}
	if err := s.AddEvent(ctx, &e); err != nil {
		t.Fatal(err)
	}
	if es, _ := s.Events(ctx, c.ID); len(es) != 1 || es[0] != e {
		t.Errorf("events %+v", es)
	}
}

func TestInTxRollsBack(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	c := testChain()
	boom := errors.New("boom")
	err := s.InTx(ctx, func(tx provisioner.Store) error {
		if err := tx.PutChain(ctx, &c); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx: %v", err)
	}
	if all, _ := s.Chains(ctx, false); len(all) != 0 {
		t.Errorf("rolled-back chain visible: %+v", all)
	}
}

func TestCorruptFileIsRefusedAndUntouched(t *testing.T) {
	for name, content := range map[string][]byte{
		"text":      []byte("this is not a database, but someone's notes\n"),
		"truncated": []byte("SQLite form"),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, DBName)
			if err := os.WriteFile(p, content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), dir, Options{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want ErrCorrupt", err)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, content) {
				t.Errorf("file changed")
			}
			if _, err := os.Stat(p + "-wal"); !os.IsNotExist(err) {
				t.Errorf("WAL file created beside a corrupt database: %v", err)
			}
		})
	}
	// A damaged page behind a valid header: reads fail with ErrCorrupt.
	dir := t.TempDir()
	s := open(t, dir)
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		c := testChain()
		c.ID = "c-" + strconv.Itoa(i)
		c.Script = string(bytes.Repeat([]byte("x"), 500))
		if err := s.PutChain(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	p := filepath.Join(dir, DBName)
	b, _ := os.ReadFile(p)
	for i := 4096 + 100; i < len(b); i++ { // garble every page after the first
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, dir, Options{})
	if err == nil {
		_, err = s2.Chains(ctx, false)
		s2.Close()
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged database: %v, want ErrCorrupt", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(after, b) {
		t.Errorf("damaged file changed")
	}
}

func TestLockedDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	c := testChain()
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	// Another process's writer (a second connection) holds the write lock.
	other, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, DBName)+"?_busy_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	c2 := testChain()
	c2.State = provisioner.ChainCancelled
	err = s.PutChain(ctx, &c2)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("write under another writer: %v, want ErrLocked", err)
	}
	// Reads still work (WAL) and the data is as it was.
	if got, err := s.Chain(ctx, c.ID); err != nil || got.State != provisioner.ChainActive {
		t.Fatalf("read under lock: %+v, %v", got, err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := s.PutChain(ctx, &c2); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestCoalescedWaits: consecutive waits about one segment under one policy
// without error are one row (first time, last time, count, latest reason);
// any other decision, an error, or another segment starts a new row.
func TestCoalescedWaits(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	c := testChain()
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	wait := func(m, seg int, reason, errText string) provisioner.DecisionRecord {
		return provisioner.DecisionRecord{Time: at(m), ChainID: c.ID, Segment: seg, Policy: "lead", Action: provisioner.Wait, Reason: reason, Score: float64(-m), Error: errText}
	}
	recs := []provisioner.DecisionRecord{
		wait(0, 1, "in 50m", ""), wait(10, 1, "in 40m", ""), wait(20, 1, "in 30m", ""), // → row 1: ×3, 08:00–08:20, "in 30m"
		{Time: at(50), ChainID: c.ID, Segment: 1, Policy: "lead", Action: provisioner.SubmitNow, Reason: "submit", JobID: "12"}, // row 2
		wait(60, 2, "pending", ""), wait(70, 2, "pending", ""), // row 3: ×2
		wait(80, 2, "pending", "policy failed"),      // row 4: an error is never folded
		wait(90, 2, "pending", ""),                   // row 5: nor into an error
		wait(100, 3, "pending", ""),                  // row 6: another segment
		wait(110, 3, "kept the pin: node2 idle", ""), // row 7: another reason (#51)
		wait(120, 3, "kept the pin: node3 idle", ""), // the same reason, other figures
	}
	for i := range recs {
		if err := s.Record(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.Decisions(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		seg, count  int
		action      provisioner.Action
		first, last time.Time
		reason      string
		score       float64
	}
	want := []row{
		{1, 3, provisioner.Wait, at(0), at(20), "in 30m", -20},
		{1, 1, provisioner.SubmitNow, at(50), time.Time{}, "submit", 0},
		{2, 2, provisioner.Wait, at(60), at(70), "pending", -70},
		{2, 1, provisioner.Wait, at(80), time.Time{}, "pending", -80},
		{2, 1, provisioner.Wait, at(90), time.Time{}, "pending", -90},
		{3, 1, provisioner.Wait, at(100), time.Time{}, "pending", -100},
		{3, 2, provisioner.Wait, at(110), at(120), "kept the pin: node3 idle", -120},
	}
	if len(ds) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(ds), len(want), ds)
	}
	for i, w := range want {
		d := ds[i]
		got := row{d.Segment, d.Count, d.Action, d.Time, d.Last, d.Reason, d.Score}
		if got != w {
			t.Errorf("row %d: %+v, want %+v", i+1, got, w)
		}
	}
	// The MemStore coalesces the same way.
	m := provisioner.NewMemStore()
	for i := range recs {
		_ = m.Record(ctx, &recs[i])
	}
	md, _ := m.Decisions(ctx, c.ID)
	if len(md) != len(want) || md[0].Count != 3 || !md[0].Last.Equal(at(20)) || md[2].Count != 2 || max(md[5].Count, 1) != 1 || md[6].Count != 2 {
		t.Errorf("MemStore: %+v", md)
	}
}

// TestMigrationFromVersion1: a database written before waits were
// coalesced is brought to version 2; its rows count one each.
func TestMigrationFromVersion1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, DBName))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TABLE schema_version (version INTEGER NOT NULL, applied INTEGER NOT NULL)`, migrations[0],
		`INSERT INTO schema_version VALUES (1, 0)`,
		`INSERT INTO decisions(time, chain_id, segment, policy, action, reason, score, features, job_id, error) VALUES (1, 'c-1', 1, 'lead', 'wait', 'in 50m', 0, '', '', '')`,
		`INSERT INTO chains VALUES ('c-1', 'n', '/s.sbatch', '[]', 'lead', 2, 1, '', '', 60, 1, 0, 'active', '', 1)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s := open(t, dir)
	if v, _ := s.Version(ctx); v != 10 {
		t.Fatalf("version %d", v)
	}
	// a chain of schema 1 has no recorded directory, environment, models, workload, script copy, signal lead, keeper nor cluster
	if c, err := s.Chain(ctx, "c-1"); err != nil || c.Script != "/s.sbatch" || c.WorkDir != "" || c.Env != nil || c.Models != "" || c.Workload != "" || c.Cost != nil ||
		c.ScriptCopy != "" || c.ScriptHash != "" || c.ScriptSeen != "" || c.SubmitScript() != "/s.sbatch" || c.SignalLead != 0 || c.PolicyWhy != "" || c.Keeper != "" || c.Cluster != "" {
		t.Fatalf("chain of schema 1: %+v, %v", c, err)
	}
	ds, _ := s.Decisions(ctx, "c-1")
	if len(ds) != 1 || ds[0].Count != 1 || !ds[0].Last.IsZero() || ds[0].Reason != "in 50m" {
		t.Fatalf("decisions %+v", ds)
	}
	// and the old row takes the next wait for the same reason
	if err := s.Record(ctx, &provisioner.DecisionRecord{Time: time.Unix(0, 2), ChainID: "c-1", Segment: 1, Policy: "lead", Action: provisioner.Wait, Reason: "in 40m"}); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.Decisions(ctx, "c-1"); len(ds) != 1 || ds[0].Count != 2 || ds[0].Reason != "in 40m" {
		t.Fatalf("decisions %+v", ds)
	}
}

func TestTooNewSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.db.Exec(`INSERT INTO schema_version(version, applied) VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrTooNew) {
		t.Fatalf("Open: %v, want ErrTooNew", err)
	}
}

func TestLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), LockName)
	l1, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(p); !errors.Is(err, ErrHeld) {
		t.Fatalf("second TryLock: %v, want ErrHeld", err)
	}
	start := time.Now()
	if _, err := WaitLock(context.Background(), p, 300*time.Millisecond); !errors.Is(err, ErrHeld) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("WaitLock: %v after %s", err, time.Since(start))
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		l1.Unlock()
	}()
	l2, err := WaitLock(context.Background(), p, 5*time.Second)
	if err != nil {
		t.Fatalf("WaitLock after release: %v", err)
	}
	l2.Unlock()
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file mode %v", fi.Mode().Perm())
	}
}

// The engine's crash-and-adopt path on the real store: a job submitted
// before a crash (the commit never happened) is adopted, not resubmitted.
func TestEngineOnSQLite(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	c := testChain()
	c.Policy = provisioner.PolicyReactive
	if err := s.PutChain(ctx, &c); err != nil {
		t.Fatal(err)
	}
	f := &fakeCluster{}
	eng := &provisioner.Engine{Cluster: f, Store: s, Clock: fixed(t0), Log: slog.New(slog.DiscardHandler)}
	rep, err := eng.Cycle(ctx)
	if err != nil || rep.Submitted() != 1 {
		t.Fatalf("first cycle: %+v %v", rep, err)
	}
	// Simulate a submission whose commit was lost: the backend holds a job tagged 1.0.
	f.jobs = append(f.jobs, provisioner.Job{ID: "77", State: provisioner.StatePending, Comment: provisioner.MustTag(c.ID, 1, 0)})
	f.jobs[0].State, f.jobs[0].Start = provisioner.StateRunning, t0
	eng.Clock = fixed(t0.Add(10 * time.Minute))
	rep, err = eng.Cycle(ctx)
	if err != nil || rep.Adopted != 1 || rep.Submitted() != 0 {
		t.Fatalf("second cycle: %+v %v", rep, err)
	}
	segs, _ := s.Segments(ctx, c.ID)
	if len(segs) != 2 || segs[1].JobID != "77" || segs[0].State != provisioner.StateRunning {
		t.Fatalf("segments %+v", segs)
	}
	ds, _ := s.Decisions(ctx, c.ID)
	if len(ds) != 3 || ds[0].Action != provisioner.ActFirst || ds[1].Action != provisioner.ActAdopt || ds[2].Action != provisioner.Wait {
		t.Fatalf("decisions %+v", ds)
	}
}

type fixed time.Time

func (f fixed) Now() time.Time { return time.Time(f) }

type fakeCluster struct {
	jobs []provisioner.Job
	n    int
}

func (f *fakeCluster) Snapshot(context.Context) (*provisioner.Snapshot, error) {
	return &provisioner.Snapshot{Jobs: append([]provisioner.Job(nil), f.jobs...)}, nil
}

func (f *fakeCluster) Submit(_ context.Context, req provisioner.SubmitRequest) (string, error) {
	f.n++
	id := strconv.Itoa(f.n)
	f.jobs = append(f.jobs, provisioner.Job{ID: id, State: provisioner.StatePending, Comment: req.Comment})
	return id, nil
}

func (f *fakeCluster) Cancel(context.Context, string) error         { return nil }
func (f *fakeCluster) Signal(context.Context, string, string) error { return nil }

// TestAllSegments: one read of every chain's segments gives what Segments
// gives chain by chain (the engine's hand-offs of ended chains use it).
func TestAllSegments(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	for i, id := range []string{"c-b", "c-a", "c-empty"} {
		c := testChain()
		c.ID = id
		if err := s.PutChain(ctx, &c); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2-i && id != "c-empty"; k++ {
			for a := 0; a <= k; a++ {
				sg := provisioner.Segment{ChainID: id, Index: k, Attempt: a, JobID: id + strconv.Itoa(k) + strconv.Itoa(a), State: provisioner.StateTimeout,
					Submit: t0, Start: t0.Add(time.Duration(k) * time.Hour), End: t0.Add(time.Duration(k+1) * time.Hour), ExitCode: a, Note: "n"}
				if err := s.PutSegment(ctx, &sg); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	all, err := s.AllSegments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || len(all["c-b"]) != 3 || len(all["c-a"]) != 1 {
		t.Fatalf("AllSegments: %d chains, c-b %d, c-a %d segments; want 2, 3, 1", len(all), len(all["c-b"]), len(all["c-a"]))
	}
	for _, id := range []string{"c-b", "c-a", "c-empty"} {
		one, err := s.Segments(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(one) != len(all[id]) {
			t.Fatalf("%s: %d segments by chain, %d at once", id, len(one), len(all[id]))
		}
		for i := range one {
			if one[i] != all[id][i] {
				t.Errorf("%s segment %d: %+v by chain, %+v at once", id, i, one[i], all[id][i])
			}
		}
	}
}
