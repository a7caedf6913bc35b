package slurm

import (
	"bytes"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// Sep separates fields in the text formats mirage asks for: the ASCII unit
// separator, which users do not type into job names or comments.
const Sep = "\x1f"

// squeueFields are the `squeue -O` fields ParseSqueueText reads, in order.
// Comment comes last so that it may hold anything, even Sep.
var squeueFields = []string{
	"JobArrayID", "Name", "UserName", "Account", "Partition", "QOS", "State", "Reason",
	"SubmitTime", "EligibleTime", "StartTime", "EndTime", "TimeLimit", "NumNodes",
	"tres-per-node", "tres-per-job", "tres-alloc", "PriorityLong", "NodeList", "Dependency", "Comment",
}

// SqueueFormat is the `squeue -O` argument whose output ParseSqueueText reads:
// every field unpadded (":0") and followed by Sep, except the last.
var SqueueFormat = formatO(squeueFields)

// formatO builds an -O format: "A:0<Sep>,B:0<Sep>,...,Z:0".
func formatO(fields []string) string {
	var b strings.Builder
	for i, f := range fields {
		b.WriteString(f)
		b.WriteString(":0")
		if i < len(fields)-1 {
			b.WriteString(Sep + ",")
		}
	}
	return b.String()
}

// lines splits output into non-empty lines (a missing final newline is fine).
func lines(b []byte) []string {
	var out []string
	for _, l := range lineSeq(b) {
		out = append(out, l)
	}
	return out
}

// lineSeq yields the non-blank lines of b (a trailing CR dropped) with
// their 0-based index among them, each converted to a string alone: the
// strings a parser keeps never pin the whole output (100,000 squeue rows
// are 25 MB), and no copy of it is made.
func lineSeq(b []byte) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		i := 0
		for len(b) > 0 {
			l := b
			if k := bytes.IndexByte(b, '\n'); k >= 0 {
				l, b = b[:k], b[k+1:]
			} else {
				b = nil
			}
			l = bytes.TrimRight(l, "\r")
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			if !yield(i, string(l)) {
				return
			}
			i++
		}
	}
}

// countLines is an upper bound of the records in b (its newlines, plus
// one), to size a parser's output once.
func countLines(b []byte) int { return bytes.Count(b, []byte{'\n'}) + 1 }

// interner keeps one copy of each repeated short value of a text output
// (users, accounts, partitions, QOS, reasons, GPU types, node names):
// 300,000 records name a few hundred of each. Past maxIntern values it
// copies without keeping.
type interner map[string]string

func (in interner) str(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	s = strings.Clone(s)
	if len(in) < maxIntern {
		in[s] = s
	}
	return s
}

// strs interns each of names in place.
func (in interner) strs(names []string) []string {
	for i, n := range names {
		names[i] = in.str(n)
	}
	return names
}

// ParseSqueueText parses `squeue -h -a -t all -O SqueueFormat` output
// (every field, names and comments included). Times are read in loc (the
// zone the command ran in; mirage exports TZ to it). Exit codes are not
// available in this format. A line that does not parse is left out; the
// error then joins one error per such line, and jobs still holds the rest.
// The Client does not read this format (see squeueSafeFields).
func ParseSqueueText(b []byte, loc *time.Location) ([]provisioner.Job, error) {
	jobs, skipped := parseSqueueRows(b, loc, squeueAllCols)
	return jobs, skippedErr(skipped)
}

// parseSqueueRows parses squeue -O text laid out as cols; lines that do not
// parse are skipped and returned.
func parseSqueueRows(b []byte, loc *time.Location, cols *columns) ([]provisioner.Job, []Skipped) {
	p := newRowParser(loc, cols, squeueRow, countLines(b))
	p.feed(b)
	return p.jobs(), p.skipped
}

// squeueRow reads one squeue record (fields f, laid out as p.cols).
func squeueRow(p *rowParser, f []string) (j provisioner.Job, keep bool, err error) {
	get := func(name string) string { return p.cols.get(f, name) }
	in := p.in
	j = provisioner.Job{
		ID: strings.Clone(strings.TrimSpace(get("JobArrayID"))), Name: strings.Clone(nullStr(get("Name"))), User: in.str(get("UserName")),
		Account: in.str(get("Account")), Partition: in.str(get("Partition")), QOS: in.str(get("QOS")), State: mapStates(get("State")),
		Depend: strings.Clone(clean(get("Dependency"))), Comment: strings.Clone(nullStr(get("Comment"))),
	}
	j.Reason = in.str(reasonOf(j.State, get("Reason")))
	if j.ID == "" {
		return j, false, fmt.Errorf("empty job id")
	}
	var start, end time.Time
	for k, t := range []*time.Time{&j.Submit, &j.Eligible, &start, &end} {
		name := [...]string{"SubmitTime", "EligibleTime", "StartTime", "EndTime"}[k]
		if *t, err = parseSlurmTime(get(name), p.loc); err != nil {
			return j, false, fmt.Errorf("field %s: %w", name, err)
		}
	}
	if j.TimeLimit, err = limitOf(get("TimeLimit")); err != nil {
		return j, false, fmt.Errorf("field TimeLimit: %w", err)
	}
	if j.Nodes, err = atoiField(get("NumNodes")); err != nil {
		return j, false, fmt.Errorf("field NumNodes: %w", err)
	}
	if j.Priority, err = strconv.ParseInt(strings.TrimSpace(get("PriorityLong")), 10, 64); err != nil {
		j.Priority = 0
	}
	switch {
	case j.State == provisioner.StatePending:
		j.EstStart = start
	default:
		j.Start = start
		if j.NodeList, err = p.hb.nodeList(get("NodeList")); err != nil {
			return j, false, err
		}
		j.NodeList = in.strs(j.NodeList)
		if j.State.Finished() {
			j.End = end
			j.Start = startedAt(j)
		}
	}
	alloc := get("tres-alloc")
	j.GPUs, j.GPUType = jobGPUs(j.State, alloc, alloc, clean(get("tres-per-job")), clean(get("tres-per-node")), j.Nodes)
	j.GPUType = in.str(j.GPUType)
	return j, true, nil
}

// rowParser reads the records of one text output, a line at a time (fed
// whole, or streamed as the command prints them: Client.runLines), into
// jobs; a line that does not parse is skipped and kept in skipped.
//
// When the number of lines is known ahead (a whole output) each line is
// parsed as it comes, into a slice of that size. A streamed read does not
// know it: its lines are spooled, as text, into chunks that hold no
// pointers, and parsed by jobs into one slice of exactly their number. A
// job is about 400 bytes and its line about 200: collecting 300,000 jobs
// in blocks and joining them held both copies at once (the daemon's peak),
// and growing one slice by doubling moved half a gigabyte.
type rowParser struct {
	loc     *time.Location
	cols    *columns
	row     func(p *rowParser, f []string) (j provisioner.Job, keep bool, err error)
	hb      *hostBudget
	in      interner
	fb      []string // the current line's fields (reused)
	n       int      // non-blank lines read
	out     []provisioner.Job
	spool   bool     // the size is not known ahead (streamed): lines go to chunks
	chunks  [][]byte // the spooled lines, each ended by a newline
	spooled int      // lines in chunks
	skipped []Skipped
}

// spoolChunk is the size of the chunks a streamed read spools its lines in.
const spoolChunk = 1 << 20

// newRowParser starts a parser; size is the most jobs it will keep (the
// lines of a whole output), or 0 when not known (a streamed read).
func newRowParser(loc *time.Location, cols *columns, row func(*rowParser, []string) (provisioner.Job, bool, error), size int) *rowParser {
	p := &rowParser{loc: loc, cols: cols, row: row, hb: newHostBudget(), in: interner{}, spool: size <= 0}
	if size > 0 {
		p.out = make([]provisioner.Job, 0, size)
	}
	return p
}

// feed reads every line of b.
func (p *rowParser) feed(b []byte) { feedLines(b, p.line) }

// line reads one line (without its newline; blank lines are not counted).
// l is not kept.
func (p *rowParser) line(l []byte) {
	l = bytes.TrimRight(l, "\r")
	if len(bytes.TrimSpace(l)) == 0 {
		return
	}
	if p.spool {
		k := len(p.chunks) - 1
		if k < 0 || len(p.chunks[k])+len(l)+1 > cap(p.chunks[k]) {
			p.chunks = append(p.chunks, make([]byte, 0, max(spoolChunk, len(l)+1)))
			k++
		}
		p.chunks[k] = append(append(p.chunks[k], l...), '\n')
		p.spooled++
		return
	}
	p.parse(l)
}

// parse reads one non-blank line into a job, or into skipped.
func (p *rowParser) parse(l []byte) {
	p.n++
	f, ok := p.cols.splitInto(p.fb[:0], string(l))
	p.fb = f
	if !ok {
		p.skipped = append(p.skipped, p.cols.skip(p.n, f, fmt.Errorf("%d fields, want %d", len(f), p.cols.n)))
		return
	}
	j, keep, err := p.row(p, f)
	switch {
	case err != nil:
		p.skipped = append(p.skipped, p.cols.skip(p.n, f, err))
	case keep:
		p.out = append(p.out, j)
	}
}

// jobs returns every job kept, in order, in one slice (parsing the spooled
// lines first; each chunk is let go once read).
func (p *rowParser) jobs() []provisioner.Job {
	if !p.spool {
		return p.out
	}
	p.spool = false
	p.out = make([]provisioner.Job, 0, p.spooled)
	for i, c := range p.chunks {
		p.chunks[i] = nil
		for len(c) > 0 {
			k := bytes.IndexByte(c, '\n')
			p.parse(c[:k])
			c = c[k+1:]
		}
	}
	p.chunks, p.spooled = nil, 0
	return p.out
}

// atoiField reads a non-negative count; "" and "N/A" are 0.
func atoiField(s string) (int, error) {
	s = strings.TrimSpace(s)
	if clean(s) == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad count %q", s)
	}
	return n, nil
}

// nullStr maps "(null)" (Slurm's rendering of an unset string) to "".
func nullStr(s string) string {
	if s == "(null)" {
		return ""
	}
	return s
}

// parseSlurmTime reads Slurm's standard time format "2026-11-22T19:13:57" in
// loc; "N/A", "Unknown", "None", "(null)", "0" and "" are the zero time.
func parseSlurmTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "N/A", "Unknown", "None", "(null)", "0":
		return time.Time{}, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	t, err := time.ParseInLocation(timeLayout, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: want YYYY-MM-DDTHH:MM:SS (is SLURM_TIME_FORMAT set?)", s)
	}
	return t, nil
}

// limitOf reads a time limit column of squeue, sacct or sinfo
// (slurmfmt.ParseDuration). 0 means no limit known: every special word
// (UNLIMITED, Partition_Limit, N/A, ...) reads as 0, as Job.TimeLimit and
// Partition.MaxTime/DefaultTime document.
func limitOf(s string) (time.Duration, error) {
	d, err := slurmfmt.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d.Kind != slurmfmt.Set {
		return 0, nil
	}
	return d.Value, nil
}

// FormatDuration renders a limit for sbatch --time as "D-HH:MM:SS", days
// always written, rounded up to the second (every Slurm release reads it;
// slurmfmt.ParseDuration reads it back). 0 or less is "" (no --time).
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	sec := int64((d + time.Second - 1) / time.Second)
	days := sec / 86400
	sec %= 86400
	return fmt.Sprintf("%d-%02d:%02d:%02d", days, sec/3600, sec%3600/60, sec%60)
}

// SacctFields are the `sacct -o` fields ParseSacctParsable reads, in order;
// Comment comes last so that it may hold anything.
var SacctFields = []string{
	"JobID", "JobName", "User", "Account", "Partition", "QOS", "State", "Reason",
	"Submit", "Eligible", "Start", "End", "Timelimit", "NNodes", "AllocTRES", "ReqTRES",
	"Priority", "NodeList", "ExitCode", "Comment",
}

// ParseSacctParsable parses `sacct -X -P -n --delimiter=<Sep> -o SacctFields`
// output (one line per job allocation; step lines, ids with ".", are
// skipped). Times are read in loc. A line that does not parse is left out;
// the error then joins one error per such line, and jobs still holds the
// rest. The Client does not read this format (see sacctSafeFields).
func ParseSacctParsable(b []byte, loc *time.Location) ([]provisioner.Job, error) {
	jobs, skipped := parseSacctRows(b, loc, sacctAllCols)
	return jobs, skippedErr(skipped)
}

// parseSacctRows parses sacct --parsable2 text laid out as cols; lines that
// do not parse are skipped and returned.
func parseSacctRows(b []byte, loc *time.Location, cols *columns) ([]provisioner.Job, []Skipped) {
	p := newRowParser(loc, cols, sacctRow, countLines(b))
	p.feed(b)
	return p.jobs(), p.skipped
}

// sacctRow reads one sacct record (fields f, laid out as p.cols); a header
// or a job step is not kept.
func sacctRow(p *rowParser, f []string) (j provisioner.Job, keep bool, err error) {
	get := func(name string) string { return p.cols.get(f, name) }
	if f[0] == "JobID" || strings.Contains(f[0], ".") {
		return j, false, nil
	}
	in := p.in
	j = provisioner.Job{
		ID: strings.Clone(strings.TrimSpace(get("JobID"))), Name: strings.Clone(get("JobName")), User: in.str(get("User")),
		Account: in.str(get("Account")), Partition: in.str(get("Partition")), QOS: in.str(get("QOS")), State: mapStates(get("State")),
		Reason: in.str(clean(get("Reason"))), Comment: strings.Clone(nullStr(get("Comment"))),
	}
	if j.ID == "" {
		return j, false, fmt.Errorf("empty job id")
	}
	var start, end time.Time
	for k, t := range []*time.Time{&j.Submit, &j.Eligible, &start, &end} {
		name := [...]string{"Submit", "Eligible", "Start", "End"}[k]
		if *t, err = parseSlurmTime(get(name), p.loc); err != nil {
			return j, false, fmt.Errorf("field %s: %w", name, err)
		}
	}
	if j.TimeLimit, err = limitOf(get("Timelimit")); err != nil {
		return j, false, fmt.Errorf("field Timelimit: %w", err)
	}
	if j.Nodes, err = atoiField(get("NNodes")); err != nil {
		return j, false, fmt.Errorf("field NNodes: %w", err)
	}
	j.GPUs, j.GPUType = jobGPUs(j.State, get("AllocTRES"), get("ReqTRES"), "", "", j.Nodes)
	j.GPUType = in.str(j.GPUType)
	if pr, err := strconv.ParseInt(strings.TrimSpace(get("Priority")), 10, 64); err == nil {
		j.Priority = pr
	}
	if j.State != provisioner.StatePending {
		j.Start = start
		if j.NodeList, err = p.hb.nodeList(get("NodeList")); err != nil {
			return j, false, err
		}
		j.NodeList = in.strs(j.NodeList)
		if j.State.Finished() {
			j.End = end
			j.Start = startedAt(j) // 22.05 gives a job cancelled while pending its end as start
			if c, sig, ok := strings.Cut(get("ExitCode"), ":"); ok {
				j.ExitCode, _ = strconv.Atoi(c)
				j.Signal, _ = strconv.Atoi(sig)
			}
		}
	}
	return j, true, nil
}

// ParseScontrolJob parses `scontrol show job -o` output (one job per line,
// Key=Value pairs) into one map per job, keyed by field name
// ("JobId", "JobState", "TresPerNode", "AllocNode:Sid", ...).
//
// The format is ambiguous for values with spaces: a token that does not look
// like "Key=" (letters, digits, '_', ':', '/') continues the previous value.
// A free-text value that itself holds " word=" (a comment such as "a b=c")
// cannot be told apart from a new key; read such fields from squeue instead.
func ParseScontrolJob(b []byte) ([]map[string]string, error) {
	return parseScontrolRecords(b, "JobId", "No jobs in the system")
}

// parseScontrolRecords parses `scontrol show ENTITY -o` output, one record
// per line as Key=Value fields, each of which must hold key; a line
// starting with none (what scontrol prints for an empty list) is skipped.
func parseScontrolRecords(b []byte, key, none string) ([]map[string]string, error) {
	var out []map[string]string
	for i, l := range lines(b) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, none) {
			continue
		}
		m := map[string]string{}
		last := ""
		for _, tok := range strings.Fields(l) {
			k, v, ok := strings.Cut(tok, "=")
			if !ok || !isScontrolKey(k) {
				if last == "" {
					return nil, fmt.Errorf("scontrol: line %d: %q before any Key=Value", i+1, tok)
				}
				m[last] += " " + tok
				continue
			}
			m[k] = v
			last = k
		}
		if _, ok := m[key]; !ok {
			return nil, fmt.Errorf("scontrol: line %d: no %s in %.80q", i+1, key, l)
		}
		out = append(out, m)
	}
	return out, nil
}

// isScontrolKey reports whether k looks like a scontrol field name.
func isScontrolKey(k string) bool {
	if k == "" || !(k[0] >= 'A' && k[0] <= 'Z' || k[0] >= 'a' && k[0] <= 'z') {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '/') {
			return false
		}
	}
	return true
}

// StartFormat is the `squeue --start -h -o` argument ParseStartText reads.
const StartFormat = "%i" + Sep + "%S" + Sep + "%r"

// ParseStartText parses `squeue --start -h -o StartFormat`: job id → the
// scheduler's estimated start, read in loc. Jobs without an estimate ("N/A":
// no backfill pass yet, dependencies, holds) are left out.
func ParseStartText(b []byte, loc *time.Location) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for i, l := range lines(b) {
		f := strings.Split(l, Sep)
		if len(f) < 2 {
			return nil, fmt.Errorf("squeue --start: line %d: %d fields, want 3", i+1, len(f))
		}
		t, err := parseSlurmTime(f[1], loc)
		if err != nil {
			return nil, fmt.Errorf("squeue --start: line %d: %w", i+1, err)
		}
		if id := strings.TrimSpace(f[0]); id != "" && !t.IsZero() {
			out[id] = t
		}
	}
	return out, nil
}

// ParseSbatch reads `sbatch --parsable` output: "123" or "123;cluster"
// (warnings may precede it on other lines: the last line counts).
func ParseSbatch(b []byte) (string, error) {
	ls := lines(b)
	if len(ls) == 0 {
		return "", fmt.Errorf("sbatch: no job id in empty output")
	}
	s := strings.TrimSpace(ls[len(ls)-1])
	id, _, _ := strings.Cut(s, ";")
	if id == "" {
		return "", fmt.Errorf("sbatch: no job id in output %q", s)
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return "", fmt.Errorf("sbatch: unexpected output %q, want a job id", s)
		}
	}
	return id, nil
}

// partitionFormat is the `sinfo -h -a -o` argument ParsePartitionsText reads.
const partitionFormat = "%P" + Sep + "%a" + Sep + "%l" + Sep + "%L" + Sep + "%N" + Sep + "%G"

// Partition is one Slurm partition as sinfo reports it.
type Partition struct {
	Name        string        // partition name
	Default     bool          // the default partition (sinfo marks it with '*')
	Up          bool          // availability "up"
	MaxTime     time.Duration // MaxTime; 0 = unlimited
	DefaultTime time.Duration // DefaultTime; 0 = none (MaxTime applies)
	Nodes       []string      // member nodes
	GPUsPerNode int           // GPUs per node as configured (largest, when nodes differ)
}

// ParsePartitionsText parses `sinfo -h -a -o partitionFormat` (one line per
// partition and node state; lines of one partition are merged), in order of
// first appearance.
func ParsePartitionsText(b []byte) ([]Partition, error) {
	var out []Partition
	idx := map[string]int{}
	members := map[string]map[string]bool{}
	hb := newHostBudget()
	for i, l := range lines(b) {
		f := strings.Split(l, Sep)
		if len(f) != 6 {
			return nil, fmt.Errorf("sinfo: line %d: %d fields, want 6", i+1, len(f))
		}
		name := strings.TrimSpace(f[0])
		def := strings.HasSuffix(name, "*")
		name = strings.TrimSuffix(name, "*")
		if name == "" {
			return nil, fmt.Errorf("sinfo: line %d: empty partition name", i+1)
		}
		maxT, err := limitOf(f[2])
		if err != nil {
			return nil, fmt.Errorf("sinfo: line %d: time limit: %w", i+1, err)
		}
		defT, err := limitOf(f[3])
		if err != nil {
			return nil, fmt.Errorf("sinfo: line %d: default time: %w", i+1, err)
		}
		gpus, _ := gpusFromGres(clean(f[5]))
		k, seen := idx[name]
		if !seen {
			idx[name] = len(out)
			out = append(out, Partition{Name: name, Default: def, Up: strings.TrimSpace(f[1]) == "up", MaxTime: maxT, DefaultTime: defT})
			k = len(out) - 1
		}
		p := &out[k]
		names, err := hb.nodeList(f[4])
		if err != nil {
			return nil, fmt.Errorf("sinfo: line %d: %w", i+1, err)
		}
		if members[name] == nil {
			members[name] = map[string]bool{}
		}
		for _, n := range names {
			if !members[name][n] {
				members[name][n] = true
				p.Nodes = append(p.Nodes, n)
			}
		}
		p.GPUsPerNode = max(p.GPUsPerNode, gpus)
	}
	return out, nil
}

// nodeFields are the `sinfo -N -O` fields ParseNodesText reads.
var nodeFields = []string{"NodeList", "StateLong", "CPUsState", "Gres", "GresUsed", "Partition"}

// NodesFormat is the `sinfo -h -N -a -O` argument ParseNodesText reads.
var NodesFormat = formatO(nodeFields)

// ParseNodesText parses `sinfo -h -N -a -O NodesFormat` (one line per node
// and partition; merged per node), the fallback when --json is unavailable.
func ParseNodesText(b []byte) ([]provisioner.Node, error) {
	var out []provisioner.Node
	idx := map[string]int{}
	for i, l := range lines(b) {
		f := strings.Split(l, Sep)
		if len(f) != len(nodeFields) {
			return nil, fmt.Errorf("sinfo: line %d: %d fields, want %d", i+1, len(f), len(nodeFields))
		}
		n := provisioner.Node{Name: strings.TrimSpace(f[0]), State: mapNodeState(f[1])}
		if n.Name == "" {
			return nil, fmt.Errorf("sinfo: line %d: empty node name", i+1)
		}
		// CPUsState is allocated/idle/other/total.
		if c := strings.Split(strings.TrimSpace(f[2]), "/"); len(c) == 4 {
			n.CPUsUsed, _ = strconv.Atoi(c[0])
			n.CPUs, _ = strconv.Atoi(c[3])
		}
		n.GPUs, n.GPUType = gpusFromGres(clean(f[3]))
		n.GPUsUsed, _ = gpusFromGres(clean(f[4]))
		if p := strings.TrimSuffix(strings.TrimSpace(f[5]), "*"); p != "" {
			n.Partitions = []string{p}
		}
		addNode(&out, idx, n)
	}
	return out, nil
}
