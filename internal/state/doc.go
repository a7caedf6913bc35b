// Package state is mirage's durable chain state: a provisioner.Store (with
// its event log, decision log and transactions) in SQLite through
// github.com/mattn/go-sqlite3, and the exclusive lock that keeps two
// daemons from acting at once.
//
// Contract:
//   - The database lives in one directory (default
//     $XDG_STATE_HOME/mirage, else ~/.local/state/mirage), created 0700;
//     the database file is created 0600 before SQLite opens it, and SQLite
//     gives its WAL and shared-memory files the same mode.
//   - Only its owner may touch the state: Open and TryLock refuse
//     (ErrUnsafe, naming the path, the owner and the fix) a state
//     directory, database, WAL/SHM or lock file that another user owns,
//     that group or others may write, or that is a symbolic link; the files
//     mirage opens itself are opened with O_NOFOLLOW.
//   - WAL journal, a busy timeout, foreign keys on, IMMEDIATE transactions.
//   - The schema is versioned in table schema_version; Open applies the
//     missing migrations in order, each in its own transaction, and refuses
//     a database written by a newer mirage (ErrTooNew).
//   - Nothing is ever overwritten on error: a file that is not a SQLite
//     database or is damaged gives ErrCorrupt, a database another process
//     keeps locked past the busy timeout gives ErrLocked, and in both cases
//     the file is left as it was.
//   - Lock (flock on mirage.lock beside the database) is the daemon's
//     mutual exclusion: TryLock fails at once with ErrHeld, WaitLock polls.
package state
