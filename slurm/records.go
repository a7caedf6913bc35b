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
// newline and nothing separates fields but Sep, and every field a job's
// owner can fill with text of their choosing may hold either: a job name,
// a comment, an account where associations are not enforced, and the GPU
// requests --gres, --gpus and --gpus-per-node, which Slurm 22.05 keeps
// verbatim when a list entry names an unknown GRES ("gpu:1,gpu\n…:0", seen
// on the test cluster) and squeue prints raw in tres-per-node and
// tres-per-job. Any of them holding a newline followed by a whole record
// would forge a record of another user's job (issue #50: a forged
// COMPLETED ended a chain whose job still ran). So the Client never asks
// for such a field about every user's jobs. It reads all jobs with the
// fields slurmctld itself formats or validates (squeueSafeFields,
// sacctSafeFields: ids, users, states, reasons, times, sizes, partitions,
// QOS, dependencies, node lists and the TRES strings, from which GPUs are
// counted), and reads names, comments, accounts and GPU requests in a
// second query limited to its own user (ownFields), each line checked for
// the field count and for the job id printed at both ends. Its own user's
// text can at worst hide its own jobs' names. Other users' accounts are
// known only for the accounts the caller names (Config.Accounts: the
// teams of the team rules), by one query per account that prints job ids
// alone.
//
// A line that does not parse is skipped and counted (Client.Skipped), and
// logged once per job id; it never fails the whole read.

// Skipped is a line a text parser, or a list element a JSON parser, left out.
type Skipped struct {
	Cmd  string // "squeue", "sacct", "squeue --json" or "sacct --json"
	Line int    // 1-based line number in the output (text; 0 for JSON)
	ID   string // the job id, when the line starts with one
	Err  error  // why
	// Untagged: the skipped text carries no mirage tag
	// (provisioner.TagPrefix) anywhere, so it cannot be a job mirage
	// submitted; set by the parsers of the user's own free text
	// (parseOwnText) only, whose every field is on the line.
	Untagged bool
}

// mayHideSegments counts the skipped records that may be jobs mirage
// submitted (all but those known Untagged): each makes a history
// incomplete.
func mayHideSegments(sk []Skipped) int {
	n := 0
	for _, s := range sk {
		if !s.Untagged {
			n++
		}
	}
	return n
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

// splitInto is split with the fields appended to dst (reused across the
// lines of one output: a parser keeps no field of it without copying).
func (c *columns) splitInto(dst []string, l string) (f []string, ok bool) {
	if c.lastFree {
		return c.split(l)
	}
	for {
		k := strings.Index(l, Sep)
		if k < 0 {
			dst = append(dst, l)
			return dst, len(dst) == c.n
		}
		dst = append(dst, l[:k])
		l = l[k+len(Sep):]
	}
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
	// every user's jobs: no field its owner fills with free text.
	squeueSafeFields = without(squeueFields, "Name", "Comment", "Account", "tres-per-node", "tres-per-job")
	sacctSafeFields  = without(SacctFields, "JobName", "Comment", "Account")

	squeueAllCols  = newColumns("squeue", squeueFields, true)
	sacctAllCols   = newColumns("sacct", SacctFields, true)
	squeueSafeCols = newColumns("squeue", squeueSafeFields, false)
	sacctSafeCols  = newColumns("sacct", sacctSafeFields, false)

	// squeueOwnFields and sacctOwnFields read the user's own jobs' free
	// text, the job id at both ends so that a line cut or shifted by a
	// newline or Sep in the text never matches.
	squeueOwnFields = []string{"JobArrayID", "Name", "Comment", "Account", "tres-per-node", "tres-per-job", "JobArrayID"}
	sacctOwnFields  = []string{"JobID", "JobName", "Comment", "Account", "JobID"}

	squeueSafeFormat = formatO(squeueSafeFields)
	squeueOwnFormat  = formatO(squeueOwnFields)
)

// ownText is one of the user's own jobs' free text.
type ownText struct{ name, comment, account, perNode, perJob string }

// parseOwnText reads the output of an own-jobs query laid out as names
// (squeueOwnFields or sacctOwnFields: the job id first and last): job id →
// its free text. A line with another field count, differing ids at its
// ends, or an id seen twice is skipped.
func parseOwnText(cmd string, names []string, b []byte) (map[string]ownText, []Skipped) {
	out := map[string]ownText{}
	dup := map[string]bool{}
	var skipped []Skipped
	n := len(names)
	for i, l := range lines(b) {
		f := strings.Split(l, Sep)
		// A record of the user's own split by a newline in its name (a job
		// named "a\nb") comes as fragments; none that lacks the tag can
		// hide a segment of mirage's, whose comment always carries it.
		untagged := !strings.Contains(l, provisioner.TagPrefix)
		if len(f) != n {
			id := ""
			if len(f) > 1 && validJobID(strings.TrimSpace(f[0])) == nil {
				id = strings.TrimSpace(f[0])
			}
			skipped = append(skipped, Skipped{Cmd: cmd, Line: i + 1, ID: id, Err: fmt.Errorf("%d fields, want %d (%s)", len(f), n, strings.Join(names, ", ")), Untagged: untagged})
			continue
		}
		id := strings.TrimSpace(f[0])
		if strings.Contains(id, ".") {
			continue // a job step
		}
		if id == "" || validJobID(id) != nil || id != strings.TrimSpace(f[n-1]) {
			skipped = append(skipped, Skipped{Cmd: cmd, Line: i + 1, Err: fmt.Errorf("job ids %.40q and %.40q at the ends differ", f[0], f[n-1]), Untagged: untagged})
			continue
		}
		if _, seen := out[id]; seen || dup[id] {
			dup[id] = true
			delete(out, id)
			skipped = append(skipped, Skipped{Cmd: cmd, Line: i + 1, ID: id, Err: errors.New("job listed twice"), Untagged: untagged})
			continue
		}
		var t ownText
		for k, name := range names[1 : n-1] {
			v := f[k+1]
			switch name {
			case "Name", "JobName":
				t.name = nullStr(v)
			case "Comment":
				t.comment = nullStr(v)
			case "Account":
				t.account = nullStr(v)
			case "tres-per-node":
				t.perNode = clean(v)
			case "tres-per-job":
				t.perJob = clean(v)
			}
		}
		out[id] = t
	}
	return out, skipped
}

// applyOwn fills in the free text of user's jobs from own: names,
// comments, accounts, and from the GPU requests the GPU type (and the
// count, where the TRES strings had none).
func applyOwn(jobs []provisioner.Job, user string, own map[string]ownText) {
	for i := range jobs {
		j := &jobs[i]
		if j.User != user {
			continue
		}
		t, ok := own[j.ID]
		if !ok {
			continue
		}
		j.Name, j.Comment, j.Account = t.name, t.comment, t.account
		switch {
		case j.GPUs == 0:
			j.GPUs, j.GPUType = jobGPUs(j.State, "", "", t.perJob, t.perNode, j.Nodes)
		case j.GPUType == "":
			_, j.GPUType = gpusFromGres(nonEmpty(t.perJob, t.perNode))
		}
	}
}

// parseJobIDs reads the output of a query printing job ids alone, one per
// line (the account queries): a line that is not a job id is skipped.
func parseJobIDs(cmd string, b []byte) (map[string]bool, []Skipped) {
	ids := map[string]bool{}
	var skipped []Skipped
	for i, l := range lines(b) {
		id := strings.TrimSpace(l)
		if validJobID(id) != nil {
			skipped = append(skipped, Skipped{Cmd: cmd, Line: i + 1, Err: fmt.Errorf("%.40q is not a job id", l)})
			continue
		}
		ids[id] = true
	}
	return ids, skipped
}
