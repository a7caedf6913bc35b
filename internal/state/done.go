package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/provisioner"
)

// DoneDir is the directory of the done markers inside the state directory.
// `mirage done`, run by a segment's job on a compute node, writes one file
// there (the state directory is the same path there, in the shared home);
// the daemon on the login node takes them into the database (IngestDone).
// The job never opens the database: SQLite over a network file system,
// written from several hosts, is not safe.
const DoneDir = "done"

// doneExt ends the name of every done marker (CHAIN.SEGMENT.done).
const doneExt = ".done"

// DoneMark is what `mirage done` records: segment Segment of chain Chain
// (the attempt that runs as job Job, or its latest when Job is "") said at
// Time that the chain's work is finished.
type DoneMark struct {
	Chain   string    `json:"chain"`
	Segment int       `json:"segment"`
	Job     string    `json:"job,omitempty"`
	Time    time.Time `json:"time"`
}

// ErrBadMark is wrapped by MarkDone's errors for a mark that cannot be
// recorded: a chain id that could not name a file, a negative segment.
var ErrBadMark = errors.New("bad done mark")

// markChainID is what a chain id must look like to name a marker file:
// mirage's own ids ("c-20261123-ab12cd") and anything of the same letters.
var markChainID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// check refuses a mark that cannot name its file or its segment.
func (m *DoneMark) check() error {
	if !markChainID.MatchString(m.Chain) {
		return fmt.Errorf("%w: chain id %q: want letters, digits, '.', '_' and '-' (a chain id as mirage status lists it)", ErrBadMark, m.Chain)
	}
	if m.Segment < 0 {
		return fmt.Errorf("%w: segment %d: want 0 or more", ErrBadMark, m.Segment)
	}
	return nil
}

// MarkDone records m in the state directory (DoneDir/CHAIN.SEGMENT.done,
// mode 0600, written atomically, replacing an earlier mark of the same
// segment) and returns the file's path. The state and marker directories
// are made 0700 when absent and must be private (ErrUnsafe otherwise); a
// mark that cannot be recorded is ErrBadMark, a directory or file that
// cannot be written ErrNoDir. It does not open the database.
func (l *Location) MarkDone(m DoneMark) (string, error) {
	if err := m.check(); err != nil {
		return "", err
	}
	dir, err := l.Resolve()
	if err != nil {
		return "", err
	}
	marks := filepath.Join(dir, DoneDir)
	if err := os.MkdirAll(marks, 0o700); err != nil {
		return "", &dirError{ErrNoDir, fmt.Errorf("state directory %s: %w", dir, err)}
	}
	for _, d := range []string{dir, marks} {
		if err := checkDir(d); err != nil {
			return "", err
		}
	}
	path := filepath.Join(marks, m.Chain+"."+strconv.Itoa(m.Segment)+doneExt)
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	err = safefile.WriteFile(path, 0o600, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err })
	if err != nil {
		return "", &dirError{ErrNoDir, fmt.Errorf("done marker %s: %w", path, err)}
	}
	return path, nil
}

// IngestDone implements provisioner.DoneSource: it takes the done markers
// of the store's state directory into the database, each in one
// transaction: the segment it names is stored with Done set (the attempt
// whose job it names, else the latest attempt of its index), with an
// EventWorkDone, and the marker is removed. It returns the chains whose
// segments it marked. A marker whose chain or segment the database does
// not hold yet stays for a later cycle (the daemon has not adopted the job
// yet); one of an ended chain is removed. Markers that cannot be read
// (another user's file, bad JSON) are left in place and reported in
// problems, one error each naming the file; err is a database failure.
func (s *Store) IngestDone(ctx context.Context) (marked []string, problems []error, err error) {
	marks := filepath.Join(filepath.Dir(s.path), DoneDir)
	entries, err := os.ReadDir(marks)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("done markers %s: %w", marks, err)
	}
	if err := checkDir(marks); err != nil {
		return nil, []error{err}, nil
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, doneExt) || strings.HasPrefix(name, ".") { // "." : a marker being written
			continue
		}
		path := filepath.Join(marks, name)
		m, rerr := readMark(path)
		if rerr != nil {
			problems = append(problems, rerr)
			continue
		}
		took, remove, err := s.takeMark(ctx, m)
		if err != nil {
			return marked, problems, err
		}
		if took && !slices.Contains(marked, m.Chain) {
			marked = append(marked, m.Chain)
		}
		if remove {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, fmt.Errorf("done marker %s: %w", path, err))
			}
		}
	}
	return marked, problems, nil
}

// readMark reads one marker file, which must be the user's own (not a
// link, not writable by others).
func readMark(path string) (DoneMark, error) {
	var m DoneMark
	f, err := safefile.OpenOwned(path)
	if err != nil {
		return m, fmt.Errorf("done marker %s: %w (left in place)", path, err)
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, 4096)).Decode(&m); err != nil {
		return m, fmt.Errorf("done marker %s: %w (left in place; mirage done writes it)", path, err)
	}
	if err := m.check(); err != nil {
		return m, fmt.Errorf("done marker %s: %w (left in place)", path, err)
	}
	return m, nil
}

// takeMark stores mark m on its segment (see IngestDone) and says whether
// it did and whether the marker file is done with.
func (s *Store) takeMark(ctx context.Context, m DoneMark) (took, remove bool, err error) {
	err = s.InTx(ctx, func(tx provisioner.Store) error {
		c, err := tx.Chain(ctx, m.Chain)
		if errors.Is(err, provisioner.ErrChainNotFound) {
			return nil // not (yet) in this database: kept
		}
		if err != nil {
			return err
		}
		if c.State != provisioner.ChainActive {
			remove = true
			return nil
		}
		segs, err := tx.Segments(ctx, m.Chain)
		if err != nil {
			return err
		}
		seg := markedSegment(segs, m)
		if seg == nil {
			return nil // its job not adopted yet: kept
		}
		remove = true
		if seg.Done {
			return nil
		}
		seg.Done = true
		if err := tx.PutSegment(ctx, seg); err != nil {
			return err
		}
		took = true
		return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: m.Time, ChainID: m.Chain, Segment: seg.Index, Attempt: seg.Attempt, JobID: seg.JobID,
			Kind: provisioner.EventWorkDone, Detail: "mirage done: the work is finished; the chain ends when this segment ends"})
	})
	return took, remove, err
}

// markedSegment is the stored segment mark m names: the attempt of its
// index whose job is m.Job, else (m.Job "") the latest attempt; nil when
// none is stored.
func markedSegment(segs []provisioner.Segment, m DoneMark) *provisioner.Segment {
	var found *provisioner.Segment
	for i := range segs {
		s := &segs[i]
		if s.Index != m.Segment {
			continue
		}
		if m.Job != "" && s.JobID == m.Job {
			return s
		}
		if m.Job == "" && (found == nil || s.Attempt > found.Attempt) {
			found = s
		}
	}
	return found
}
