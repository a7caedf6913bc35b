package slurm

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// TestSentinelsEverySchema: wherever a Slurm number becomes a time or a
// duration, NO_VAL (4294967294) and INFINITE (4294967295) mean "none", in
// every form a schema writes them: plain numbers (22.05, and sacct's
// time.start of a never-started job up to v0.0.43) and {set,infinite,number}
// objects (v0.0.39 on). Each squeue and sacct fixture of testdata (one per
// schema) has every job's time fields replaced by one sentinel form at a
// time; every parsed time must then be zero and every limit 0 (none),
// never a date in 2106 or an overflowed duration (issue #17).
func TestSentinelsEverySchema(t *testing.T) {
	forms := map[string]any{
		"plain NO_VAL":     json.Number("4294967294"),
		"plain INFINITE":   json.Number("4294967295"),
		"unset":            map[string]any{"set": false, "infinite": false, "number": json.Number("0")},
		"infinite":         map[string]any{"set": true, "infinite": true, "number": json.Number("0")},
		"set NO_VAL":       map[string]any{"set": true, "infinite": false, "number": json.Number("4294967294")},
		"set INFINITE":     map[string]any{"set": true, "infinite": false, "number": json.Number("4294967295")},
		"set NO_VAL64":     map[string]any{"set": true, "infinite": false, "number": json.Number("18446744073709551614")},
		"plain NO_VAL64":   json.Number("18446744073709551614"),
		"plain INFINITE64": json.Number("18446744073709551615"),
	}
	// The job fields that are times or limits: squeue's at the job's top
	// level, sacct's inside the job's "time" object.
	squeueKeys := []string{"submit_time", "eligible_time", "start_time", "end_time", "time_limit"}
	sacctKeys := []string{"submission", "eligible", "start", "end", "limit"}
	parsers := map[string]func([]byte) ([]provisioner.Job, Version, error){
		"squeue": ParseSqueueJSON, "sacct": ParseSacctJSON,
	}
	for cmd, parse := range parsers {
		files, err := filepath.Glob(filepath.Join("testdata", cmd+"-*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s fixtures: %v", cmd, err)
		}
		schemas := map[string]bool{}
		for _, file := range files {
			var doc map[string]any
			dec := json.NewDecoder(strings.NewReader(readTestdata(t, filepath.Base(file))))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			_, v, err := parse(mustJSON(t, doc))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			schemas[v.Schema] = true
			plainOnly := v.Schema == "openapi/v0.0.38" // 22.05 writes no objects
			for name, form := range forms {
				if _, isObj := form.(map[string]any); isObj && plainOnly {
					continue
				}
				jobs, _ := doc["jobs"].([]any)
				if len(jobs) == 0 {
					t.Fatalf("%s: no jobs", file)
				}
				for _, j := range jobs {
					job := j.(map[string]any)
					if cmd == "squeue" {
						for _, k := range squeueKeys {
							job[k] = form
						}
					} else if tm, ok := job["time"].(map[string]any); ok {
						for _, k := range sacctKeys {
							tm[k] = form
						}
					}
				}
				got, _, err := parse(mustJSON(t, doc))
				if err != nil {
					t.Errorf("%s with %s times: %v", file, name, err)
					continue
				}
				for _, g := range got {
					for field, tm := range map[string]time.Time{"Submit": g.Submit, "Eligible": g.Eligible, "Start": g.Start, "End": g.End} {
						if !tm.IsZero() {
							t.Errorf("%s (%s) with %s times: job %s %s = %s, want none", file, v.Schema, name, g.ID, field, tm)
						}
					}
					if g.TimeLimit != 0 {
						t.Errorf("%s (%s) with %s times: job %s TimeLimit = %s, want 0 (none)", file, v.Schema, name, g.ID, g.TimeLimit)
					}
				}
			}
		}
		t.Logf("%s schemas covered: %v", cmd, schemas)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
