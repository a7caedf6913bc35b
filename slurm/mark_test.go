package slurm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// sacctWithComments is the recorded 24.11 sacct --json answer with the
// given job comments set.
func sacctWithComments(t *testing.T, comments map[int]string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(readTestdata(t, "sacct-24.11.json")), &doc); err != nil {
		t.Fatal(err)
	}
	for _, j := range doc["jobs"].([]any) {
		job := j.(map[string]any)
		if c, ok := comments[int(job["job_id"].(float64))]; ok {
			job["comment"].(map[string]any)["job"] = c
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// MarkEnded adds the word to an ended job's comment with one sacctmgr
// call (the comment whole, one argument), leaves a marked job alone, and
// refuses a running job, an unknown one, a bad id and a Slurm before
// 23.02 (whose sacctmgr lowercased comments) without running sacctmgr. In the recorded answer job 34 (root) timed out and job 35
// runs.
func TestMarkEnded(t *testing.T) {
	const tagged = "mirage:c-1/0.0 mirage-spec=e30 mirage-mac=00ff"
	submitted := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		version  string // sinfo --version ("" = 24.11)
		id       string
		comment  string
		sacctmgr reply
		wantArgs []string // sacctmgr's, nil: not run
		wantErr  error    // nil: none; errAny: some
	}{
		{name: "ended", id: "34", comment: tagged, sacctmgr: reply{out: " Modified jobs...\n  34 submitted at 2026-11-22T19:13:57\n"},
			wantArgs: []string{"-i", "modify", "job", "where", "jobid=34", "set", "comment=" + tagged + " " + provisioner.EndMark}},
		{name: "22.05 lowercases", version: "slurm-wlm 22.05.8", id: "34", comment: tagged, wantErr: ErrMarkUnsupported},
		{name: "marked already", id: "34", comment: tagged + " " + provisioner.EndMark},
		{name: "running", id: "35", comment: tagged, wantErr: errAny},
		{name: "not in sacct", id: "99", comment: tagged, wantErr: provisioner.ErrNotFound},
		{name: "bad id", id: "-1", comment: tagged, wantErr: errAny},
		{name: "sacctmgr refuses", id: "34", comment: tagged, sacctmgr: reply{out: " Nothing modified\n", err: errors.New("exit status 1")},
			wantArgs: []string{"-i", "modify", "job", "where", "jobid=34", "set", "comment=" + tagged + " " + provisioner.EndMark}, wantErr: errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{replies: map[string][]reply{
				"sacct":    {{out: sacctWithComments(t, map[int]string{34: tc.comment, 35: tc.comment})}},
				"sacctmgr": {tc.sacctmgr},
				"sinfo":    {{out: cmp.Or(tc.version, "slurm 24.11.1") + "\n"}},
			}}
			c, _ := newTestClient(t, r, func(c *Config) { c.SacctFormat, c.Self, c.Retry.Attempts = FormatJSON, "root", 1 })
			err := c.MarkEnded(context.Background(), tc.id, submitted, provisioner.EndMark)
			switch {
			case tc.wantErr == nil && err != nil, tc.wantErr != nil && err == nil:
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			case tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("err %v, want one matching %v", err, tc.wantErr)
			}
			var got []string
			for _, cl := range r.calls {
				if cl.name == "sacctmgr" {
					if got != nil {
						t.Fatalf("sacctmgr ran twice: %v", r.calls)
					}
					got = cl.args
				}
			}
			if !slices.Equal(got, tc.wantArgs) {
				t.Errorf("sacctmgr args %q, want %q", got, tc.wantArgs)
			}
		})
	}
}

// errAny stands for any error in TestMarkEnded's table.
var errAny = errors.New("any error")
