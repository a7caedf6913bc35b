package chainops

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// This file renders the views of the chain commands (mirage status, log,
// submit, recover, daemon) as text tables and as the documents their
// --json flags print.

// SegmentJSON is one segment in mirage status --json.
type SegmentJSON struct {
	Index    int        `json:"index"`
	Attempt  int        `json:"attempt"`
	JobID    string     `json:"job_id,omitempty"`
	State    string     `json:"state"`
	Submit   *time.Time `json:"submit,omitempty"`
	Start    *time.Time `json:"start,omitempty"`
	End      *time.Time `json:"end,omitempty"`
	ExitCode int        `json:"exit_code"`
	Note     string     `json:"note,omitempty"`
	Pinned   string     `json:"pinned,omitempty"` // nodes a pending successor is pinned to (the pin policy), comma-separated
	GapSec   *float64   `json:"gap_s,omitempty"`  // start − predecessor's end (final attempts only)
	Done     bool       `json:"done,omitempty"`   // its job ran mirage done: the chain ends with it
}

// segmentNote is the NOTE column: the segment's note, the nodes a pending
// successor is pinned to, and whether its job ran mirage done.
func segmentNote(s *provisioner.Segment) string {
	note := s.Note
	if s.Pinned != "" && s.State == provisioner.StatePending {
		note = strings.TrimPrefix(note+"; pinned to "+s.Pinned, "; ")
	}
	if s.Done {
		note = strings.TrimPrefix(note+"; mirage done: the work is finished", "; ")
	}
	return note
}

// ChainJSON is one chain in mirage status --json.
type ChainJSON struct {
	ID          string               `json:"id"`
	Name        string               `json:"name"`
	Script      string               `json:"script"`
	ScriptHash  string               `json:"script_hash,omitempty"` // content hash of the private copy every segment is submitted from
	ScriptCopy  string               `json:"script_copy,omitempty"` // that copy
	ScriptSeen  string               `json:"script_seen,omitempty"` // what the original became, when it no longer matches the copy
	Args        []string             `json:"args,omitempty"`
	WorkDir     string               `json:"work_dir,omitempty"` // where every segment runs (sbatch --chdir)
	Models      string               `json:"models,omitempty"`   // the learned policy's models directory, recorded by submit
	Policy      string               `json:"policy"`
	PolicyWhy   string               `json:"policy_why,omitempty"` // why mirage chose it (the site's default), when it did
	Workload    string               `json:"workload,omitempty"`   // training, service, or "" (the published cost)
	Cost        *provisioner.GapCost `json:"cost,omitempty"`       // explicit weights, when given
	Segments    int                  `json:"segments"`             // 0: until done
	MaxRetries  int                  `json:"max_retries"`
	Account     string               `json:"account,omitempty"`
	Partition   string               `json:"partition,omitempty"`
	TimeLimitS  int64                `json:"time_limit_s"`
	SignalLeadS int64                `json:"signal_lead_s,omitempty"` // --signal …@SECS: Slurm signals each segment this long before its limit
	Nodes       int                  `json:"nodes"`
	GPUs        int                  `json:"gpus"`
	State       string               `json:"state"`
	Reason      string               `json:"reason,omitempty"`
	Created     time.Time            `json:"created"`
	SegmentList []SegmentJSON        `json:"segment_list"`
}

// JSON is the view as mirage status --json prints it.
func (v *ChainView) JSON() ChainJSON {
	c := &v.Chain
	j := ChainJSON{ID: c.ID, Name: c.Name, Script: c.Script, ScriptHash: c.ScriptHash, ScriptCopy: c.ScriptCopy, ScriptSeen: c.ScriptSeen, Args: c.Args, WorkDir: c.WorkDir, Models: c.Models, Policy: c.Policy, PolicyWhy: c.PolicyWhy, Workload: c.Workload, Cost: c.Cost, Segments: c.Segments, MaxRetries: c.MaxRetries,
		Account: c.Account, Partition: c.Partition, TimeLimitS: int64(c.TimeLimit / time.Second), SignalLeadS: int64(c.SignalLead / time.Second), Nodes: c.Nodes, GPUs: c.GPUs,
		State: string(c.State), Reason: c.Reason, Created: c.Created, SegmentList: []SegmentJSON{}}
	for i, s := range v.Segments {
		sj := SegmentJSON{Index: s.Index, Attempt: s.Attempt, JobID: s.JobID, State: string(s.State), ExitCode: s.ExitCode, Note: s.Note, Pinned: s.Pinned,
			Submit: timePtr(s.Submit), Start: timePtr(s.Start), End: timePtr(s.End), Done: s.Done}
		if g, ok := v.Gaps[i]; ok {
			v := g.Seconds()
			sj.GapSec = &v
		}
		j.SegmentList = append(j.SegmentList, sj)
	}
	return j
}

// WriteText prints the chain and a table of its segments with the gaps.
func (v *ChainView) WriteText(out io.Writer) error {
	c := &v.Chain
	fmt.Fprintf(out, "chain     %s (%s)\n", c.ID, c.Name)
	fmt.Fprintf(out, "state     %s", c.State)
	if c.Reason != "" {
		fmt.Fprintf(out, ": %s", c.Reason)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "script    %s %s\n", c.Script, strings.Join(c.Args, " "))
	if c.ScriptHash != "" {
		fmt.Fprintf(out, "copy      %s (every segment is submitted from %s)\n", c.ScriptHash, c.ScriptCopy)
	}
	if c.ScriptSeen != "" {
		fmt.Fprintf(out, "original  %s\n", c.ScriptSeen)
	}
	fmt.Fprintf(out, "policy    %s, %s, max retries %d\n", c.Policy, provisioner.SegmentsText(c.Segments), c.MaxRetries)
	if c.PolicyWhy != "" {
		fmt.Fprintf(out, "          chosen by mirage: %s\n", c.PolicyWhy)
	}
	if c.Workload != "" || c.Cost != nil {
		fmt.Fprintf(out, "cost      %s (%s)\n", cmp.Or(c.Workload, "explicit weights"), c.CostOf())
	}
	fmt.Fprintf(out, "shape     limit %s, %d node(s), %d GPU(s), partition %s, account %s\n", limitText(c.TimeLimit), max(c.Nodes, 1), c.GPUs, dash(c.Partition), dash(c.Account))
	if c.SignalLead > 0 {
		fmt.Fprintf(out, "signal    %s before the limit (--signal): a segment that exits 0 after that continues the chain\n", secs(c.SignalLead))
	}
	fmt.Fprintf(out, "created   %s\n\n", c.Created.UTC().Format(time.RFC3339))
	tw := newTable(out, "SEG\tTRY\tJOB\tSTATE\tEXIT\tSUBMIT\tSTART\tEND\tGAP\tNOTE")
	for i, s := range v.Segments {
		gap := "-"
		if g, ok := v.Gaps[i]; ok {
			gap = signed(g)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Index, s.Attempt, dash(s.JobID), s.State, s.ExitCode,
			stamp(s.Submit), stamp(s.Start), stamp(s.End), gap, dash(segmentNote(&s)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	interruption, overlap := v.Totals()
	_, err := fmt.Fprintf(out, "\ninterruption %s in total, overlap %s in total\n", secs(interruption), secs(overlap))
	return err
}

// ChainViews are the chains mirage status lists.
type ChainViews []ChainView

// JSON is the list as mirage status --json prints it.
func (vs ChainViews) JSON() []ChainJSON {
	all := make([]ChainJSON, 0, len(vs))
	for i := range vs {
		all = append(all, vs[i].JSON())
	}
	return all
}

// WriteText prints one line per chain: the segment it is at (ShownSegment;
// 0-based, as mirage status CHAIN and mirage log count them) and how many
// it runs, that segment's job and the job's state, and the last gap.
func (vs ChainViews) WriteText(out io.Writer) error {
	tw := newTable(out, "CHAIN\tNAME\tPOLICY\tSTATE\tSEG\tOF\tJOB\tJOB STATE\tLAST GAP\tREASON")
	for i := range vs {
		v := &vs[i]
		c := &v.Chain
		segCol, job, jobState := "-", "-", "-"
		if s := v.ShownSegment(); s != nil {
			segCol, job, jobState = strconv.Itoa(s.Index), dash(s.JobID), string(s.State)
		}
		gapCol := "-"
		if g, ok := v.LastGap(); ok {
			gapCol = signed(g)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Policy, c.State, segCol, provisioner.SegmentsText(c.Segments), job, jobState, gapCol, dash(c.Reason))
	}
	return tw.Flush()
}

// ShownSegment is the segment a one-line view of the chain shows: while
// the chain is active its latest (a successor queued ahead, say); once it
// has ended, the latest that started, not a successor submitted ahead and
// cancelled when the work was done, which never ran. nil without segments.
func (v *ChainView) ShownSegment() *provisioner.Segment {
	n := len(v.Segments)
	if n == 0 {
		return nil
	}
	if v.Chain.State != provisioner.ChainActive {
		for i := n - 1; i >= 0; i-- {
			if !v.Segments[i].Start.IsZero() {
				return &v.Segments[i]
			}
		}
	}
	return &v.Segments[n-1]
}

// DecisionJSON is one decision in mirage log --json.
type DecisionJSON struct {
	Time     time.Time `json:"time"`
	Segment  int       `json:"segment"`
	Policy   string    `json:"policy"`
	Action   string    `json:"action"`
	Reason   string    `json:"reason,omitempty"`
	Score    float64   `json:"score"`
	Features string    `json:"features,omitempty"`
	JobID    string    `json:"job_id,omitempty"`
	Error    string    `json:"error,omitempty"`
	Count    int       `json:"count"`         // consecutive identical waits this entry stands for
	Last     time.Time `json:"last,omitzero"` // time of the last of them, when more than one
}

// EventJSON is one event in mirage log --json.
type EventJSON struct {
	Time    time.Time `json:"time"`
	Segment int       `json:"segment"`
	Attempt int       `json:"attempt"`
	JobID   string    `json:"job_id,omitempty"`
	Kind    string    `json:"kind"`
	Detail  string    `json:"detail,omitempty"`
	Value   float64   `json:"value"`
}

// ChainLogJSON is mirage log --json.
type ChainLogJSON struct {
	Chain     string         `json:"chain"`
	Policy    string         `json:"policy"`
	PolicyWhy string         `json:"policy_why,omitempty"` // why mirage chose it (the site's default), when it did
	Decisions []DecisionJSON `json:"decisions"`
	Events    []EventJSON    `json:"events,omitempty"`
}

// JSON is the log as mirage log --json prints it.
func (lg *ChainLogView) JSON() ChainLogJSON {
	v := ChainLogJSON{Chain: lg.Chain.ID, Policy: lg.Chain.Policy, PolicyWhy: lg.Chain.PolicyWhy, Decisions: []DecisionJSON{}}
	for _, d := range lg.Decisions {
		dj := DecisionJSON{Time: d.Time.UTC(), Segment: d.Segment, Policy: d.Policy, Action: string(d.Action),
			Reason: d.Reason, Score: d.Score, Features: d.Features, JobID: d.JobID, Error: d.Error, Count: max(d.Count, 1)}
		if d.Count > 1 {
			dj.Last = d.Last.UTC()
		}
		v.Decisions = append(v.Decisions, dj)
	}
	for _, e := range lg.Events {
		v.Events = append(v.Events, EventJSON{Time: e.Time.UTC(), Segment: e.Segment, Attempt: e.Attempt, JobID: e.JobID, Kind: string(e.Kind), Detail: provisioner.DecodeSpecText(e.Detail), Value: e.Value})
	}
	return v
}

// WriteText prints the decisions as a table and, with events, the event
// log as a second one.
func (lg *ChainLogView) WriteText(out io.Writer, events bool) error {
	if c := &lg.Chain; c.PolicyWhy != "" {
		fmt.Fprintf(out, "policy %s, chosen by mirage: %s\n\n", c.Policy, c.PolicyWhy)
	}
	tw := newTable(out, "TIME\tSEG\tPOLICY\tACTION\tJOB\tREASON")
	for _, d := range lg.Decisions {
		reason := d.Reason
		if d.Error != "" {
			reason += " [error: " + d.Error + "]"
		}
		when, action := stamp(d.Time), string(d.Action)
		if d.Count > 1 {
			when += " – " + stamp(d.Last)
			action += fmt.Sprintf(" ×%d", d.Count)
			reason = "latest: " + reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", when, segText(d.Segment), d.Policy, action, dash(d.JobID), reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !events {
		return nil
	}
	fmt.Fprintln(out)
	tw = newTable(out, "TIME\tSEG\tJOB\tEVENT\tDETAIL")
	for _, e := range lg.Events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", stamp(e.Time), segText(e.Segment), dash(e.JobID), e.Kind, provisioner.DecodeSpecText(e.Detail))
	}
	return tw.Flush()
}

// WriteRecovered prints mirage recover's table (since: the start of the
// history read, for the message when there is nothing).
func WriteRecovered(out io.Writer, results []Recovered, since time.Time) error {
	if len(results) == 0 {
		_, err := fmt.Fprintf(out, "no tagged jobs in squeue or in sacct since %s\n", since.UTC().Format(time.RFC3339))
		return err
	}
	tw := newTable(out, "CHAIN\tJOBS\tACTION\tSTATE\tSCRIPT\tNOTE")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Chain, r.Jobs, r.Action, dash(r.State), dash(displayWords(append([]string{r.Script}, r.Args...))), dash(r.Note))
	}
	return tw.Flush()
}

// newTable starts a table of the chain commands with its header line.
func newTable(out io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

func segText(i int) string {
	if i < 0 {
		return "-"
	}
	return fmt.Sprint(i)
}

func limitText(d time.Duration) string {
	if d == 0 {
		return "partition default"
	}
	return d.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func signed(d time.Duration) string {
	if d < 0 {
		return secs(d)
	}
	return "+" + secs(d)
}

// secs prints a duration to the second ("1h2m3s"): what people read in
// reasons and views; the stores keep full precision.
func secs(d time.Duration) string { return d.Round(time.Second).String() }

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// CycleJSON is one daemon cycle's report as mirage daemon --json prints it.
type CycleJSON struct {
	Time        time.Time        `json:"time"`
	Acted       bool             `json:"acted"` // false when another daemon held the lock
	Chains      int              `json:"chains"`
	Submitted   int              `json:"submitted"`
	Rejected    int              `json:"rejected"`
	Adopted     int              `json:"adopted"`
	Updated     int              `json:"updated"`
	Ended       int              `json:"ended"`
	Waits       int              `json:"waits"`
	Cancelled   int              `json:"cancelled"`
	Errors      int              `json:"errors"`
	HistoryOK   bool             `json:"history_ok"`
	Submissions []SubmissionJSON `json:"submissions,omitempty"`
	Error       string           `json:"error,omitempty"`
}

// SubmissionJSON is one submission in CycleJSON.
type SubmissionJSON struct {
	Chain   string `json:"chain"`
	Segment int    `json:"segment"`
	Attempt int    `json:"attempt"`
	JobID   string `json:"job_id,omitempty"`
	Error   string `json:"error,omitempty"`
}

// ReportJSON is the report r of a cycle that acted; cerr is the cycle's error.
func ReportJSON(r *provisioner.Report, cerr error) CycleJSON {
	j := CycleJSON{Time: r.Time, Acted: true, Chains: r.Chains, Submitted: r.Submitted(), Rejected: r.Rejected(), Adopted: r.Adopted,
		Updated: r.Updated, Ended: r.Ended, Waits: r.Waits, Cancelled: r.Cancelled, Errors: r.Errors, HistoryOK: r.HistoryOK}
	for _, s := range r.Submissions {
		sj := SubmissionJSON{Chain: s.ChainID, Segment: s.Segment, Attempt: s.Attempt, JobID: s.JobID}
		if s.Err != nil {
			sj.Error = s.Err.Error()
		}
		j.Submissions = append(j.Submissions, sj)
	}
	if cerr != nil {
		j.Error = cerr.Error()
	}
	return j
}

// WriteReport prints the counts of the cycle r and one line per submission.
func WriteReport(out io.Writer, r *provisioner.Report) error {
	_, err := fmt.Fprintf(out, "%s cycle: %d active chains; %d submitted, %d rejected, %d adopted, %d waits, %d ended, %d cancelled, %d errors\n",
		r.Time.UTC().Format(time.RFC3339), r.Chains, r.Submitted(), r.Rejected(), r.Adopted, r.Waits, r.Ended, r.Cancelled, r.Errors)
	for _, s := range r.Submissions {
		if s.Err != nil {
			fmt.Fprintf(out, "  chain %s segment %d.%d: not submitted: %v\n", s.ChainID, s.Segment, s.Attempt, s.Err)
		} else {
			fmt.Fprintf(out, "  chain %s segment %d.%d: job %s\n", s.ChainID, s.Segment, s.Attempt, s.JobID)
		}
	}
	return err
}

// FirstJSON is mirage submit --json.
type FirstJSON struct {
	Chain  string `json:"chain"`
	JobID  string `json:"job_id,omitempty"`
	Status string `json:"status"` // submitted, deferred, failed, existing
	Reason string `json:"reason,omitempty"`
}

// JSON is the outcome of chain c's first submission as mirage submit
// --json prints it.
func (f *First) JSON(c *provisioner.Chain) FirstJSON {
	return FirstJSON{Chain: c.ID, JobID: f.JobID, Status: f.Status, Reason: f.Reason}
}

// WriteText prints the registration of chain c and its first submission
// (nothing when it failed: the caller reports the error).
func (f *First) WriteText(out io.Writer, c *provisioner.Chain) error {
	var err error
	switch f.Status {
	case "submitted":
		_, err = fmt.Fprintf(out, "chain %s registered (%s, %s, policy %s); segment 0 submitted as job %s\n", c.ID, filepath.Base(c.Script), provisioner.SegmentsText(c.Segments), c.Policy, f.JobID)
	case "deferred":
		_, err = fmt.Fprintf(out, "chain %s registered; first segment deferred: %s (mirage daemon submits it later)\n", c.ID, f.Reason)
	case "existing":
		_, err = fmt.Fprintf(out, "chain %s is already active for this script, these sbatch options and this directory (registered %s); not registering another (--new registers a second chain)\n",
			c.ID, c.Created.UTC().Format(time.RFC3339))
	}
	return err
}

// CancelledPrinter is a done function for CancelChain that prints each
// cancelled job to out.
func CancelledPrinter(out io.Writer) func(provisioner.Segment) {
	return func(s provisioner.Segment) { fmt.Fprintf(out, "cancelled job %s (segment %d)\n", s.JobID, s.Index) }
}

// WriteText prints the outcome of cancelling chain c (c as it was read
// before CancelChain).
func (r *CancelResult) WriteText(out io.Writer, c *provisioner.Chain) error {
	for _, s := range r.Ended {
		fmt.Fprintf(out, "job %s (segment %d) had already ended: %s exit %d, recorded as such\n", s.JobID, s.Index, s.State, s.ExitCode)
	}
	switch {
	case r.MarkErr != nil:
		fmt.Fprintf(out, "warning: the chain's last job could not be marked cancelled in Slurm's accounting (%v): if the state database is lost, "+
			"mirage recover will offer this chain as recoverable (answer n)\n", r.MarkErr)
	case r.Marked != "":
		fmt.Fprintf(out, "job %s (the chain's last) marked %s in Slurm's accounting, for mirage recover\n", r.Marked, provisioner.EndMark)
	}
	if len(r.Cancelled) == 0 {
		_, err := fmt.Fprintf(out, "chain %s is %s (%s); no pending or running jobs to cancel\n", c.ID, c.State, c.Reason)
		return err
	}
	_, err := fmt.Fprintf(out, "chain %s cancelled\n", c.ID)
	return err
}

// displayWords shows a command line read back from job comments, one word
// per argument: a word of plain characters as is, any other quoted (Go
// syntax), so that spaces, quotes and control characters are visible and
// never move the columns. Empty words at the front are left out.
func displayWords(ws []string) string {
	var b strings.Builder
	for _, w := range ws {
		if w == "" && b.Len() == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		plain := w != ""
		for _, r := range w {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
				plain = false
				break
			}
		}
		if plain {
			b.WriteString(w)
		} else {
			b.WriteString(strconv.Quote(w))
		}
	}
	return b.String()
}
