package slurm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Reading text output safely.
//
// In squeue's and sacct's text output nothing separates records but a
// newline and nothing separates fields but Sep, and a job's name and comment
// are whatever its owner typed: a name holding a newline or Sep would split
// one record into several or shift its fields. So the Client never asks for
// free text about every user's jobs. It reads all jobs without their names
// and comments (squeueSafeFields, sacctSafeFields: ids, users, states,
// times, sizes, partitions; no field a user can fill freely), and reads
// names and comments in a second query limited to its own user (ownFields),
// each line checked for the field count and for the job id printed at both
// ends. Its own user's text can at worst hide its own jobs' names.
//
// A line that does not parse is skipped and counted (Client.Skipped), and
// logged once per job id; it never fails the whole read.

// Skipped is a line a text parser, or a list element a JSON parser, left out.
type Skipped struct {
	Cmd  string // "squeue", "sacct", "squeue --json" or "sacct --json"
	Line int    // 1-based line number in the output (text; 0 for JSON)
	ID   string // the job id, when the line starts with one
	Err  error  // why
}

func (s Skipped) Error() string {
	if s.Line == 0 {
		return fmt.Sprintf("%s: a jobs element (job %q): %v", s.Cmd, s.ID, s.Err)
	}
	if s.ID != "" {
		return fmt.Sprintf("%s: line %d (job %s): %v", s.Cmd, s.Line, s.ID, s.Err)
	}
	return fmt.Sprintf("%s: line %d: %v", s.Cmd, s.Line, s.Err)
}

// skippedErr joins the skipped lines into one error (nil for none).
func skippedErr(sk []Skipped) error {
	errs := make([]error, len(sk))
	for i, s := range sk {
		errs[i] = s
	}
	return errors.Join(errs...)
}

// columns is a text layout: the field names in order, and whether the last
// field is free text that may hold Sep (only in the full layouts kept for
// ParseSqueueText and ParseSacctParsable).
type columns struct {
	cmd      string
	names    []string
	idx      map[string]int
	n        int
	lastFree bool
}

func newColumns(cmd string, names []string, lastFree bool) *columns {
	c := &columns{cmd: cmd, names: names, idx: map[string]int{}, n: len(names), lastFree: lastFree}
	for i, n := range names {
		if _, dup := c.idx[n]; !dup {
			c.idx[n] = i
		}
	}
	return c
}

// split cuts a line into its fields; ok is false when the count is wrong.
func (c *columns) split(l string) (f []string, ok bool) {
	if c.lastFree {
		f = strings.SplitN(l, Sep, c.n)
	} else {
		f = strings.Split(l, Sep)
	}
	return f, len(f) == c.n
}

// get returns field name of f, or "" when the layout lacks it.
func (c *columns) get(f []string, name string) string {
	if i, ok := c.idx[name]; ok {
		return f[i]
	}
	return ""
}

// skip builds the Skipped for line n with fields f.
func (c *columns) skip(n int, f []string, err error) Skipped {
	id := ""
	if len(f) > 1 && validJobID(strings.TrimSpace(f[0])) == nil {
		id = strings.TrimSpace(f[0])
	}
	return Skipped{Cmd: c.cmd, Line: n, ID: id, Err: err}
}

// without returns names minus drop.
func without(names []string, drop ...string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	return out
}

var (
	// squeueSafeFields and sacctSafeFields are what the Client reads about
	// every user's jobs: no name, no comment.
	squeueSafeFields = without(squeueFields, "Name", "Comment")
	sacctSafeFields  = without(SacctFields, "JobName", "Comment")

	squeueAllCols  = newColumns("squeue", squeueFields, true)
	sacctAllCols   = newColumns("sacct", SacctFields, true)
	squeueSafeCols = newColumns("squeue", squeueSafeFields, false)
	sacctSafeCols  = newColumns("sacct", sacctSafeFields, false)

	// squeueOwnFields and sacctOwnFields read the user's own jobs' names
	// and comments, the job id at both ends so that a line cut or shifted
	// by a newline or Sep in the text never matches.
	squeueOwnFields = []string{"JobArrayID", "Name", "Comment", "JobArrayID"}
	sacctOwnFields  = []string{"JobID", "JobName", "Comment", "JobID"}

	squeueSafeFormat = formatO(squeueSafeFields)
	squeueOwnFormat  = formatO(squeueOwnFields)
)

// ownText is one of the user's own jobs' free text.
type ownText struct{ name, comment string }

// parseOwnText reads the output of the own-jobs query (squeueOwnFields or
// sacctOwnFields): job id → name and comment. A line with another field
// count, differing ids at its ends, or an id seen twice is skipped.
func parseOwnText(cmd string, b []byte) (map[string]ownText, []Skipped) {
	out := map[string]ownText{}
	dup := map[string]bool{}
	var skipped []Skipped
	for i, l := range lines(b) {
		f := strings.Split(l, Sep)
		if len(f) != 4 {
			id := ""
			if len(f) > 1 && validJobID(strings.TrimSpace(f[0])) == nil {
				id = strings.TrimSpace(f[0])
			}
			skipped = append(skipped, Skipped{Cmd: cmd, Line: i + 1, ID: id, Err: fmt.Errorf("%d fields, want 4 (job id, name, comment, job id)", len(f))})
			continue
		}
		id := strings.TrimSpace(f[0])
		if strings.Contains(id, ".") {
			continue // a job step
		}
		if id == "" || validJobID(id) != nil || id != strings.TrimSpace(f[3]) {
			skipped = append(skipped, Skipped{Cmd: cmd, Line: i + 1, Err: fmt.Errorf("job ids %.40q and %.40q at the ends differ", f[0], f[3])})
			continue
		}
		if _, seen := out[id]; seen || dup[id] {
			dup[id] = true
			delete(out, id)
			skipped = append(skipped, Skipped{Cmd: cmd, Line: i + 1, ID: id, Err: errors.New("job listed twice")})
			continue
		}
		out[id] = ownText{name: nullStr(f[1]), comment: nullStr(f[2])}
	}
	return out, skipped
}

// applyOwn fills in the names and comments of user's jobs from own.
func applyOwn(jobs []provisioner.Job, user string, own map[string]ownText) {
	for i := range jobs {
		if jobs[i].User != user {
			continue
		}
		if t, ok := own[jobs[i].ID]; ok {
			jobs[i].Name, jobs[i].Comment = t.name, t.comment
		}
	}
}
