package state

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/mirage-gpu/mirage/provisioner"
)

// File names inside the state directory.
const (
	DBName   = "mirage.db"   // the SQLite database
	LockName = "mirage.lock" // the daemon's lock file
)

// Errors for expected conditions.
var (
	// ErrCorrupt means the file is not a readable mirage database; it was left untouched.
	ErrCorrupt = errors.New("state database is corrupt or not a SQLite database")
	// ErrLocked means another process kept the database locked past the busy timeout.
	ErrLocked = errors.New("state database is locked by another process")
	// ErrTooNew means the database was written by a newer mirage.
	ErrTooNew = errors.New("state database schema is newer than this mirage")
)

// DefaultDir returns $XDG_STATE_HOME/mirage, or ~/.local/state/mirage.
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "mirage"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state directory: no $XDG_STATE_HOME and no home directory (use --state DIR): %w", err)
	}
	return filepath.Join(home, ".local", "state", "mirage"), nil
}

// Options tune Open.
type Options struct {
	BusyTimeout time.Duration // how long to wait for another process's lock (default 5 s)
}

// Store is the SQLite provisioner.Store.
type Store struct {
	db   *sql.DB
	q    querier
	path string
}

var (
	_ provisioner.Store       = (*Store)(nil)
	_ provisioner.EventStore  = (*Store)(nil)
	_ provisioner.DecisionLog = (*Store)(nil)
	_ provisioner.TxStore     = (*Store)(nil)
	_ provisioner.DoneSource  = (*Store)(nil)
)

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Open opens (creating when absent) the database in dir and brings its
// schema up to date.
func Open(ctx context.Context, dir string, o Options) (*Store, error) {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if dir == "" {
		return nil, errors.New("state directory: empty path")
	}
	if strings.ContainsAny(dir, "?#") {
		return nil, fmt.Errorf("state directory %q: '?' and '#' are not supported in the path", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, DBName)
	// SQLite replays a WAL it finds beside the database: one planted by
	// someone else would write into ours. Refuse before SQLite opens anything.
	for _, p := range []string{path + "-wal", path + "-shm", filepath.Join(dir, LockName)} {
		if err := checkFile(p); err != nil {
			return nil, err
		}
	}
	if err := prepareFile(path); err != nil {
		return nil, err
	}
	dsn := fmt.Sprintf("file:%s?_busy_timeout=%d&_txlock=immediate&_journal_mode=WAL&_foreign_keys=1&_synchronous=NORMAL",
		path, o.BusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer per process; transactions and reads never interleave
	s := &Store{db: db, q: db, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// prepareFile creates the database file 0600 when absent, tightens the mode
// of an existing one that group or others may only read, refuses one that is
// a symbolic link, owned by another user or writable by group or others
// (ErrUnsafe), and refuses a file that is not a SQLite database (before
// SQLite touches it).
func prepareFile(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		return f.Close()
	case err != nil:
		return fmt.Errorf("state database %s: %w", path, err)
	case fi.Mode()&os.ModeSymlink != 0:
		return checkPrivate(path, fi, false)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("state database %s is not a regular file: %w", path, ErrCorrupt)
	}
	if err := checkPrivate(path, fi, false); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return fmt.Errorf("state database %s: tighten mode to 0600: %w", path, err)
		}
	}
	if fi.Size() == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("state database %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, 16)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, []byte("SQLite format 3\x00")) {
		return fmt.Errorf("%s: %w (left untouched; move it away to start afresh, or run mirage recover with a new --state)", path, ErrCorrupt)
	}
	return nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// wrap classifies SQLite errors into ErrLocked and ErrCorrupt, with context.
func (s *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked:
			return fmt.Errorf("%s: %s: %w (another process holds it; try again, or find it with fuser %s): %v", what, s.path, ErrLocked, s.path, err)
		case sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
			return fmt.Errorf("%s: %s: %w (left untouched): %v", what, s.path, ErrCorrupt, err)
		}
	}
	return fmt.Errorf("%s: %s: %w", what, s.path, err)
}

// migrations are the schema versions in order; migration i brings the
// schema from version i to i+1. Never edit one that has shipped: append.
var migrations = []string{
	`CREATE TABLE chains (
		id          TEXT PRIMARY KEY,
		name        TEXT NOT NULL,
		script      TEXT NOT NULL,
		args        TEXT NOT NULL,          -- JSON list
		policy      TEXT NOT NULL,
		segments    INTEGER NOT NULL,       -- 0: until done
		max_retries INTEGER NOT NULL,
		account     TEXT NOT NULL,
		partition   TEXT NOT NULL,
		time_limit  INTEGER NOT NULL,       -- seconds
		nodes       INTEGER NOT NULL,
		gpus        INTEGER NOT NULL,
		state       TEXT NOT NULL,
		reason      TEXT NOT NULL,
		created     INTEGER NOT NULL        -- Unix ns
	);
	CREATE TABLE segments (
		chain_id  TEXT NOT NULL REFERENCES chains(id),
		idx       INTEGER NOT NULL,
		attempt   INTEGER NOT NULL,
		job_id    TEXT NOT NULL,
		state     TEXT NOT NULL,
		submit    INTEGER NOT NULL,
		start     INTEGER NOT NULL,
		end       INTEGER NOT NULL,
		exit_code INTEGER NOT NULL,
		note      TEXT NOT NULL,
		PRIMARY KEY (chain_id, idx, attempt)
	);
	CREATE TABLE decisions (
		id       INTEGER PRIMARY KEY AUTOINCREMENT,
		time     INTEGER NOT NULL,
		chain_id TEXT NOT NULL,
		segment  INTEGER NOT NULL,
		policy   TEXT NOT NULL,
		action   TEXT NOT NULL,
		reason   TEXT NOT NULL,
		score    REAL NOT NULL,
		features TEXT NOT NULL,
		job_id   TEXT NOT NULL,
		error    TEXT NOT NULL
	);
	CREATE INDEX decisions_chain ON decisions(chain_id, id);
	CREATE TABLE events (
		id       INTEGER PRIMARY KEY AUTOINCREMENT,
		time     INTEGER NOT NULL,
		chain_id TEXT NOT NULL,
		segment  INTEGER NOT NULL,
		attempt  INTEGER NOT NULL,
		job_id   TEXT NOT NULL,
		kind     TEXT NOT NULL,
		detail   TEXT NOT NULL,
		value    REAL NOT NULL
	);
	CREATE INDEX events_chain ON events(chain_id, id);
	CREATE INDEX chains_state ON chains(state);`,
	// 2: consecutive waits are coalesced into one row (count, last time).
	`ALTER TABLE decisions ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
	ALTER TABLE decisions ADD COLUMN last INTEGER NOT NULL DEFAULT 0;`,
	// 3: the directory and environment submit recorded for the segments.
	`ALTER TABLE chains ADD COLUMN work_dir TEXT NOT NULL DEFAULT '';
	ALTER TABLE chains ADD COLUMN env TEXT NOT NULL DEFAULT '{}';`,
	// 4: the models directory of a chain's learned policy.
	`ALTER TABLE chains ADD COLUMN models TEXT NOT NULL DEFAULT '';`,
	// 5: the chain's workload and explicit cost weights (JSON; '' = the workload's).
	`ALTER TABLE chains ADD COLUMN workload TEXT NOT NULL DEFAULT '';
	ALTER TABLE chains ADD COLUMN cost TEXT NOT NULL DEFAULT '';`,
	// 6: the nodes a pending successor was pinned to (comma-separated; '' = none).
	`ALTER TABLE segments ADD COLUMN pinned TEXT NOT NULL DEFAULT '';`,
	// 7: the private copy of the script every segment is submitted from, its
	// content hash, and what the original became ('' = none made yet: the
	// daemon makes one after submit's checks).
	`ALTER TABLE chains ADD COLUMN script_copy TEXT NOT NULL DEFAULT '';
	ALTER TABLE chains ADD COLUMN script_hash TEXT NOT NULL DEFAULT '';
	ALTER TABLE chains ADD COLUMN script_seen TEXT NOT NULL DEFAULT '';`,
	// 8: the chain's --signal lead (seconds) and the segments whose job ran
	// mirage done.
	`ALTER TABLE chains ADD COLUMN signal_lead INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE segments ADD COLUMN done INTEGER NOT NULL DEFAULT 0;`,
	// 9: why mirage chose the chain's policy (the site's default; '' = the user's).
	`ALTER TABLE chains ADD COLUMN policy_why TEXT NOT NULL DEFAULT '';`,
	// 10: the state database that keeps the chain and the cluster it runs
	// on ('' for chains stored before: this database's, on the backend's
	// cluster).
	`ALTER TABLE chains ADD COLUMN keeper TEXT NOT NULL DEFAULT '';
	ALTER TABLE chains ADD COLUMN cluster TEXT NOT NULL DEFAULT '';`,
}

// SchemaVersion is the schema version this mirage writes.
func SchemaVersion() int { return len(migrations) }

// Version returns the database's schema version.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
	return v, s.wrap("read schema version", err)
}

func (s *Store) migrate(ctx context.Context) error {
	// Reading first keeps an up-to-date database usable for reads while
	// another process writes (WAL).
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_version'`).Scan(&n); err != nil {
		return s.wrap("read schema", err)
	}
	if n == 1 {
		v, err := s.Version(ctx)
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("%s: %w: version %d, this mirage knows %d (upgrade mirage)", s.path, ErrTooNew, v, len(migrations))
		}
		if v == len(migrations) {
			return nil
		}
	}
	return s.InTx(ctx, func(ps provisioner.Store) error {
		in := ps.(*Store)
		if _, err := in.q.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied INTEGER NOT NULL)`); err != nil {
			return in.wrap("create schema_version", err)
		}
		v, err := in.Version(ctx)
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("%s: %w: version %d, this mirage knows %d (upgrade mirage)", s.path, ErrTooNew, v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			if _, err := in.q.ExecContext(ctx, migrations[i]); err != nil {
				return in.wrap(fmt.Sprintf("migration %d", i+1), err)
			}
			if _, err := in.q.ExecContext(ctx, `INSERT INTO schema_version(version, applied) VALUES (?, ?)`, i+1, time.Now().UnixNano()); err != nil {
				return in.wrap("record schema version", err)
			}
		}
		return nil
	})
}

// InTx implements provisioner.TxStore: fn's writes commit together or not at all.
func (s *Store) InTx(ctx context.Context, fn func(provisioner.Store) error) error {
	if _, ok := s.q.(*sql.Tx); ok {
		return fn(s) // already inside a transaction
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("begin transaction", err)
	}
	inner := &Store{db: s.db, q: tx, path: s.path}
	if err := fn(inner); err != nil {
		_ = tx.Rollback()
		return err
	}
	return s.wrap("commit", tx.Commit())
}

func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

const chainCols = `id, name, script, args, policy, segments, max_retries, account, partition, time_limit, nodes, gpus, state, reason, created, work_dir, env, models, workload, cost, script_copy, script_hash, script_seen, signal_lead, policy_why, keeper, cluster`

func scanChain(sc interface{ Scan(...any) error }) (provisioner.Chain, error) {
	var c provisioner.Chain
	var args, state, env, cost string
	var limit, created, signalLead int64
	if err := sc.Scan(&c.ID, &c.Name, &c.Script, &args, &c.Policy, &c.Segments, &c.MaxRetries, &c.Account, &c.Partition,
		&limit, &c.Nodes, &c.GPUs, &state, &c.Reason, &created, &c.WorkDir, &env, &c.Models, &c.Workload, &cost,
		&c.ScriptCopy, &c.ScriptHash, &c.ScriptSeen, &signalLead, &c.PolicyWhy, &c.Keeper, &c.Cluster); err != nil {
		return c, err
	}
	if cost != "" {
		c.Cost = new(provisioner.GapCost)
		if err := json.Unmarshal([]byte(cost), c.Cost); err != nil {
			return c, fmt.Errorf("chain %s: cost: %w", c.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(args), &c.Args); err != nil {
		return c, fmt.Errorf("chain %s: args: %w", c.ID, err)
	}
	if err := json.Unmarshal([]byte(env), &c.Env); err != nil {
		return c, fmt.Errorf("chain %s: env: %w", c.ID, err)
	}
	if len(c.Env) == 0 {
		c.Env = nil
	}
	c.TimeLimit = time.Duration(limit) * time.Second
	c.SignalLead = time.Duration(signalLead) * time.Second
	c.State = provisioner.ChainState(state)
	c.Created = fromNS(created)
	return c, nil
}

// Chains implements provisioner.Store (creation order, then id).
func (s *Store) Chains(ctx context.Context, activeOnly bool) ([]provisioner.Chain, error) {
	q := `SELECT ` + chainCols + ` FROM chains`
	var args []any
	if activeOnly {
		q += ` WHERE state = ?`
		args = append(args, string(provisioner.ChainActive))
	}
	rows, err := s.q.QueryContext(ctx, q+` ORDER BY created, id`, args...)
	if err != nil {
		return nil, s.wrap("read chains", err)
	}
	defer rows.Close()
	var out []provisioner.Chain
	for rows.Next() {
		c, err := scanChain(rows)
		if err != nil {
			return nil, s.wrap("read chains", err)
		}
		out = append(out, c)
	}
	return out, s.wrap("read chains", rows.Err())
}

// Chain implements provisioner.Store.
func (s *Store) Chain(ctx context.Context, id string) (*provisioner.Chain, error) {
	c, err := scanChain(s.q.QueryRowContext(ctx, `SELECT `+chainCols+` FROM chains WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("chain %q: %w", id, provisioner.ErrChainNotFound)
	}
	if err != nil {
		return nil, s.wrap("read chain "+id, err)
	}
	return &c, nil
}

// PutChain implements provisioner.Store.
func (s *Store) PutChain(ctx context.Context, c *provisioner.Chain) error {
	args, err := json.Marshal(c.Args)
	if err != nil {
		return fmt.Errorf("chain %s: args: %w", c.ID, err)
	}
	if c.Args == nil {
		args = []byte("[]")
	}
	env, err := json.Marshal(c.Env)
	if err != nil {
		return fmt.Errorf("chain %s: env: %w", c.ID, err)
	}
	if c.Env == nil {
		env = []byte("{}")
	}
	var cost []byte
	if c.Cost != nil {
		if cost, err = json.Marshal(c.Cost); err != nil {
			return fmt.Errorf("chain %s: cost: %w", c.ID, err)
		}
	}
	_, err = s.q.ExecContext(ctx, `INSERT INTO chains(`+chainCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET name=excluded.name, script=excluded.script, args=excluded.args, policy=excluded.policy,
		segments=excluded.segments, max_retries=excluded.max_retries, account=excluded.account, partition=excluded.partition,
		time_limit=excluded.time_limit, nodes=excluded.nodes, gpus=excluded.gpus, state=excluded.state, reason=excluded.reason,
		created=excluded.created, work_dir=excluded.work_dir, env=excluded.env, models=excluded.models,
		workload=excluded.workload, cost=excluded.cost, script_copy=excluded.script_copy, script_hash=excluded.script_hash,
		script_seen=excluded.script_seen, signal_lead=excluded.signal_lead, policy_why=excluded.policy_why, keeper=excluded.keeper, cluster=excluded.cluster`,
		c.ID, c.Name, c.Script, string(args), c.Policy, c.Segments, c.MaxRetries, c.Account, c.Partition,
		int64(c.TimeLimit/time.Second), c.Nodes, c.GPUs, string(c.State), c.Reason, ns(c.Created), c.WorkDir, string(env), c.Models,
		c.Workload, string(cost), c.ScriptCopy, c.ScriptHash, c.ScriptSeen, int64(c.SignalLead/time.Second), c.PolicyWhy, c.Keeper, c.Cluster)
	return s.wrap("store chain "+c.ID, err)
}

// Segments implements provisioner.Store.
func (s *Store) Segments(ctx context.Context, chainID string) ([]provisioner.Segment, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+segmentCols+` FROM segments WHERE chain_id = ? ORDER BY idx, attempt`, chainID)
	if err != nil {
		return nil, s.wrap("read segments of "+chainID, err)
	}
	defer rows.Close()
	var out []provisioner.Segment
	for rows.Next() {
		sg, err := scanSegment(rows)
		if err != nil {
			return nil, s.wrap("read segments of "+chainID, err)
		}
		out = append(out, sg)
	}
	return out, s.wrap("read segments of "+chainID, rows.Err())
}

// segmentCols are the columns scanSegment reads, in its order.
const segmentCols = `chain_id, idx, attempt, job_id, state, submit, start, end, exit_code, note, pinned, done`

// scanSegment reads one row of segmentCols.
func scanSegment(rows *sql.Rows) (provisioner.Segment, error) {
	var sg provisioner.Segment
	var state string
	var sub, st, end int64
	if err := rows.Scan(&sg.ChainID, &sg.Index, &sg.Attempt, &sg.JobID, &state, &sub, &st, &end, &sg.ExitCode, &sg.Note, &sg.Pinned, &sg.Done); err != nil {
		return sg, err
	}
	sg.State = provisioner.JobState(state)
	sg.Submit, sg.Start, sg.End = fromNS(sub), fromNS(st), fromNS(end)
	return sg, nil
}

// AllSegments implements provisioner.SegmentLister: every stored segment
// in one query, by chain.
func (s *Store) AllSegments(ctx context.Context) (map[string][]provisioner.Segment, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+segmentCols+` FROM segments ORDER BY chain_id, idx, attempt`)
	if err != nil {
		return nil, s.wrap("read segments", err)
	}
	defer rows.Close()
	out := map[string][]provisioner.Segment{}
	for rows.Next() {
		sg, err := scanSegment(rows)
		if err != nil {
			return nil, s.wrap("read segments", err)
		}
		out[sg.ChainID] = append(out[sg.ChainID], sg)
	}
	return out, s.wrap("read segments", rows.Err())
}

// PutSegment implements provisioner.Store.
func (s *Store) PutSegment(ctx context.Context, sg *provisioner.Segment) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO segments(`+segmentCols+`)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(chain_id, idx, attempt) DO UPDATE SET job_id=excluded.job_id, state=excluded.state, submit=excluded.submit,
		start=excluded.start, end=excluded.end, exit_code=excluded.exit_code, note=excluded.note, pinned=excluded.pinned, done=excluded.done`,
		sg.ChainID, sg.Index, sg.Attempt, sg.JobID, string(sg.State), ns(sg.Submit), ns(sg.Start), ns(sg.End), sg.ExitCode, sg.Note, sg.Pinned, sg.Done)
	return s.wrap(fmt.Sprintf("store segment %s/%d.%d", sg.ChainID, sg.Index, sg.Attempt), err)
}

// Record implements provisioner.Store. A wait that Coalesces with the
// chain's latest row updates that row (count, last time, and the latest
// reason, score and features) instead of adding one.
func (s *Store) Record(ctx context.Context, d *provisioner.DecisionRecord) error {
	n := int64(max(d.Count, 1))
	if d.Action == provisioner.Wait && d.Error == "" {
		prev := provisioner.DecisionRecord{ChainID: d.ChainID}
		var id int64
		var action string
		err := s.q.QueryRowContext(ctx, `SELECT id, segment, policy, action, reason, error FROM decisions WHERE chain_id = ? ORDER BY id DESC LIMIT 1`, d.ChainID).
			Scan(&id, &prev.Segment, &prev.Policy, &action, &prev.Reason, &prev.Error)
		prev.Action = provisioner.Action(action)
		switch {
		case err == nil && d.Coalesces(&prev):
			_, err := s.q.ExecContext(ctx, `UPDATE decisions SET count = count + ?, last = ?, reason = ?, score = ?, features = ? WHERE id = ?`,
				n, ns(d.Time), d.Reason, d.Score, d.Features, id)
			return s.wrap("record decision for "+d.ChainID, err)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return s.wrap("record decision for "+d.ChainID, err)
		}
	}
	_, err := s.q.ExecContext(ctx, `INSERT INTO decisions(time, chain_id, segment, policy, action, reason, score, features, job_id, error, count, last)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
		ns(d.Time), d.ChainID, d.Segment, d.Policy, string(d.Action), d.Reason, d.Score, d.Features, d.JobID, d.Error, n, ns(d.Last))
	return s.wrap("record decision for "+d.ChainID, err)
}

// Decisions implements provisioner.DecisionLog.
func (s *Store) Decisions(ctx context.Context, chainID string) ([]provisioner.DecisionRecord, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT time, segment, policy, action, reason, score, features, job_id, error, count, last
		FROM decisions WHERE chain_id = ? ORDER BY id`, chainID)
	if err != nil {
		return nil, s.wrap("read decisions of "+chainID, err)
	}
	defer rows.Close()
	var out []provisioner.DecisionRecord
	for rows.Next() {
		d := provisioner.DecisionRecord{ChainID: chainID}
		var t, last int64
		var action string
		if err := rows.Scan(&t, &d.Segment, &d.Policy, &action, &d.Reason, &d.Score, &d.Features, &d.JobID, &d.Error, &d.Count, &last); err != nil {
			return nil, s.wrap("read decisions of "+chainID, err)
		}
		d.Time, d.Action, d.Last = fromNS(t), provisioner.Action(action), fromNS(last)
		out = append(out, d)
	}
	return out, s.wrap("read decisions of "+chainID, rows.Err())
}

// AddEvent implements provisioner.EventStore.
func (s *Store) AddEvent(ctx context.Context, e *provisioner.Event) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO events(time, chain_id, segment, attempt, job_id, kind, detail, value) VALUES (?,?,?,?,?,?,?,?)`,
		ns(e.Time), e.ChainID, e.Segment, e.Attempt, e.JobID, string(e.Kind), e.Detail, e.Value)
	return s.wrap("record event for "+e.ChainID, err)
}

// Events implements provisioner.EventStore.
func (s *Store) Events(ctx context.Context, chainID string) ([]provisioner.Event, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT time, segment, attempt, job_id, kind, detail, value FROM events WHERE chain_id = ? ORDER BY id`, chainID)
	if err != nil {
		return nil, s.wrap("read events of "+chainID, err)
	}
	defer rows.Close()
	var out []provisioner.Event
	for rows.Next() {
		e := provisioner.Event{ChainID: chainID}
		var t int64
		var kind string
		if err := rows.Scan(&t, &e.Segment, &e.Attempt, &e.JobID, &kind, &e.Detail, &e.Value); err != nil {
			return nil, s.wrap("read events of "+chainID, err)
		}
		e.Time, e.Kind = fromNS(t), provisioner.EventKind(kind)
		out = append(out, e)
	}
	return out, s.wrap("read events of "+chainID, rows.Err())
}
