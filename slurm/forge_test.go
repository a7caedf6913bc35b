package slurm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Issue #24, finding 1: another user's job name or comment holding a
// newline or Sep must never create, split or change a record.

// renderQueue answers squeue -O / sacct -o text queries from job records
// (field name → value), as the real commands do: the fields asked for,
// joined by Sep, one line per job, the values printed verbatim, whatever
// they hold. --user=/-u keeps one user's jobs.
type renderQueue struct {
	userCol string
	jobs    []map[string]string
}

func (q *renderQueue) Run(_ context.Context, name string, args, _ []string) ([]byte, []byte, error) {
	var want []string
	user, account := "", ""
	for i, a := range args {
		switch {
		case (a == "-O" || a == "-o") && i+1 < len(args):
			for _, f := range strings.Split(args[i+1], ",") {
				want = append(want, strings.TrimSuffix(strings.TrimSuffix(f, Sep), ":0"))
			}
		case strings.HasPrefix(a, "--user="):
			user = strings.TrimPrefix(a, "--user=")
		case a == "-u" && i+1 < len(args):
			user = args[i+1]
		case strings.HasPrefix(a, "--account="):
			account = strings.TrimPrefix(a, "--account=")
		}
	}
	if args[0] == "--version" {
		return []byte("slurm-wlm 22.05.8\n"), nil, nil
	}
	var b strings.Builder
	for _, j := range q.jobs {
		if user != "" && j[q.userCol] != user || account != "" && j["Account"] != account {
			continue
		}
		for k, w := range want {
			if k > 0 {
				b.WriteString(Sep)
			}
			b.WriteString(j[w])
		}
		b.WriteString("\n")
	}
	return []byte(b.String()), nil, nil
}

// forgedLine is a whole record of the old full layout, claiming to be
// alice's job 999 completed with a mirage tag.
func forgedLine(fields []string, idCol, userCol string) string {
	var f []string
	for _, n := range fields {
		v := map[string]string{idCol: "999", userCol: "alice", "State": "COMPLETED", "Comment": "mirage:c-1/1.1"}[n]
		if v == "" {
			v = "N/A"
		}
		f = append(f, v)
	}
	return strings.Join(f, Sep)
}

func squeueJob(id, user, name, comment string) map[string]string {
	return map[string]string{"JobArrayID": id, "Name": name, "UserName": user, "Account": "a", "Partition": "gpu", "QOS": "normal",
		"State": "RUNNING", "Reason": "None", "SubmitTime": "2026-11-23T05:00:00", "EligibleTime": "2026-11-23T05:00:00",
		"StartTime": "2026-11-23T05:01:00", "EndTime": "2026-11-23T06:01:00", "TimeLimit": "1:00:00", "NumNodes": "1",
		"tres-per-node": "N/A", "tres-per-job": "N/A", "tres-alloc": "cpu=1,node=1", "PriorityLong": "100", "NodeList": "node1",
		"Dependency": "(null)", "Comment": comment}
}

func sacctJob(id, user, name, comment string) map[string]string {
	return map[string]string{"JobID": id, "JobName": name, "User": user, "Account": "a", "Partition": "gpu", "QOS": "normal",
		"State": "COMPLETED", "Reason": "None", "Submit": "2026-11-23T05:00:00", "Eligible": "2026-11-23T05:00:00",
		"Start": "2026-11-23T05:01:00", "End": "2026-11-23T05:30:00", "Timelimit": "01:00:00", "NNodes": "1",
		"AllocTRES": "cpu=1,node=1", "ReqTRES": "cpu=1,node=1", "Priority": "100", "NodeList": "node1", "ExitCode": "0:0", "Comment": comment}
}

func forgeClient(t *testing.T, r Runner) (*Client, *strings.Builder) {
	t.Helper()
	var logs strings.Builder
	c, err := New(Config{Runner: r, TextOnly: true, SacctFormat: FormatText, Self: "alice",
		Clock: &fakeClock{now: time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c, &logs
}

// Before the fix: the comment's newline made job 999 appear (a record for
// alice that no job has: the daemon would act on it), and the name "a\nb"
// failed every squeue read ("squeue: line 1: 2 fields, want 21").
func TestOtherUsersTextCannotForgeSqueue(t *testing.T) {
	for _, tc := range []struct{ name, comment string }{
		{"ok", "x\n" + forgedLine(squeueFields, "JobArrayID", "UserName")},
		{"a\nb", "c" + Sep + "d"},
		{"a" + Sep + "b\n" + forgedLine(squeueFields, "JobArrayID", "UserName"), Sep + "\n\n"},
	} {
		q := &renderQueue{userCol: "UserName", jobs: []map[string]string{
			squeueJob("10", "alice", "train", "mirage:c-1/1.0"),
			squeueJob("11", "mallory", tc.name, tc.comment),
		}}
		c, _ := forgeClient(t, q)
		jobs, err := c.Jobs(context.Background(), JobFilter{})
		if err != nil {
			t.Fatalf("name %q: the read failed: %v", tc.name, err)
		}
		if len(jobs) != 2 || jobs[0].ID != "10" || jobs[1].ID != "11" {
			t.Fatalf("name %q: jobs %+v, want exactly 10 and 11", tc.name, jobs)
		}
		if jobs[0].Name != "train" || jobs[0].Comment != "mirage:c-1/1.0" || jobs[0].User != "alice" {
			t.Errorf("alice's own job lost its name or comment: %+v", jobs[0])
		}
		if jobs[1].Name != "" || jobs[1].Comment != "" || jobs[1].User != "mallory" || jobs[1].Partition != "gpu" {
			t.Errorf("mallory's job: %+v, want no name or comment, other fields intact", jobs[1])
		}
	}
}

func TestOtherUsersTextCannotForgeSacct(t *testing.T) {
	q := &renderQueue{userCol: "User", jobs: []map[string]string{
		sacctJob("20", "alice", "train", "mirage:c-1/1.0"),
		sacctJob("21", "mallory", "a\nb", "x\n"+forgedLine(SacctFields, "JobID", "User")),
		sacctJob("22", "mallory", "c"+Sep+"d", Sep),
	}}
	c, _ := forgeClient(t, q)
	jobs, err := c.History(context.Background(), time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
		if j.User != "alice" && (j.Name != "" || j.Comment != "") {
			t.Errorf("job %s of %s carries free text %q / %q", j.ID, j.User, j.Name, j.Comment)
		}
	}
	if strings.Join(ids, ",") != "20,21,22" {
		t.Fatalf("history %v, want exactly 20,21,22", ids)
	}
	if jobs[0].Name != "train" || jobs[0].Comment != "mirage:c-1/1.0" {
		t.Errorf("alice's job: %+v", jobs[0])
	}
}

// The user's own odd text costs only its own name: the line is skipped,
// counted and logged once per job id, and the read goes on.
func TestOwnBadTextSkippedAndCounted(t *testing.T) {
	q := &renderQueue{userCol: "UserName", jobs: []map[string]string{
		squeueJob("10", "alice", "a\nb", "c"),
		squeueJob("12", "alice", "fine", "mirage:c-2/1.0"),
	}}
	c, logs := forgeClient(t, q)
	for range 2 {
		jobs, err := c.Jobs(context.Background(), JobFilter{})
		if err != nil || len(jobs) != 2 {
			t.Fatalf("%d jobs, %v", len(jobs), err)
		}
		if jobs[0].Name != "" || jobs[1].Name != "fine" {
			t.Errorf("names %q, %q", jobs[0].Name, jobs[1].Name)
		}
	}
	if c.Skipped() != 4 {
		t.Errorf("Skipped() = %d, want 4 (2 broken lines, 2 reads)", c.Skipped())
	}
	if n := strings.Count(logs.String(), "job=10"); n != 1 {
		t.Errorf("job 10 logged %d times, want once:\n%s", n, logs)
	}
}

// Pure parser: a broken line costs that line only.
func TestParseRowsSkipsBadLine(t *testing.T) {
	good := readTestdata(t, "sacct-22.05.txt")
	in := "91" + Sep + "bad\n" + good
	jobs, skipped := parseSacctRows([]byte(in), time.UTC, sacctAllCols)
	all, err := ParseSacctParsable([]byte(good), time.UTC)
	if err != nil || len(jobs) != len(all) || len(skipped) != 1 || skipped[0].Line != 1 {
		t.Fatalf("%d jobs (want %d), skipped %v, %v", len(jobs), len(all), skipped, err)
	}
	if _, err := ParseSacctParsable([]byte(in), time.UTC); err == nil || !strings.Contains(err.Error(), "sacct: line 1") {
		t.Errorf("the exported parser does not report the skipped line: %v", err)
	}
}

// Issue #50: other users' accounts are read on the text path only for the
// accounts the Client is given (the teams), by a query printing job ids
// alone; the user's own jobs carry theirs, and their GPU type, from the
// own-jobs query.
func TestTextAccountsByQueryOnly(t *testing.T) {
	own := squeueJob("10", "alice", "train", "mirage:c-1/1.0")
	own["Account"], own["tres-per-node"], own["tres-alloc"], own["NumNodes"] = "teamb", "gres:gpu:tesla:2", "cpu=1,node=1,gres/gpu=4", "2"
	inTeam := squeueJob("11", "mallory", "x", "y")
	inTeam["Account"], inTeam["tres-alloc"] = "teama", "cpu=1,node=1,gres/gpu=1"
	evil := squeueJob("12", "mallory", "x", "y")
	evil["Account"] = "evil\n" + forgedLine(squeueFields, "JobArrayID", "UserName")
	q := &renderQueue{userCol: "UserName", jobs: []map[string]string{own, inTeam, evil}}
	c, _ := forgeClient(t, q)
	c.cfg.Accounts = []string{"teama", "bad,name"}
	jobs, err := c.Jobs(context.Background(), JobFilter{})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("%d jobs (%v), want 10, 11, 12", len(jobs), err)
	}
	// Worked out by hand: alice's job from the own query (teamb; tesla
	// from tres-per-node, 4 GPUs from tres-alloc); mallory's 11 through the
	// teama query; 12 in no named account, so none.
	want := []struct {
		acct, typ string
		gpus      int
	}{{"teamb", "tesla", 4}, {"teama", "", 1}, {"", "", 0}}
	for i, w := range want {
		if j := jobs[i]; j.Account != w.acct || j.GPUType != w.typ || j.GPUs != w.gpus {
			t.Errorf("job %s: account %q, %d GPUs of type %q; want %q, %d, %q", j.ID, j.Account, j.GPUs, j.GPUType, w.acct, w.gpus, w.typ)
		}
	}
}
