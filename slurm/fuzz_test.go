package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Fuzz targets for every parser. The JSON parsers use their own scanner, so
// besides "never panics" they are checked against encoding/json: a document
// encoding/json accepts must parse to the same result as its canonical
// re-encoding (keys sorted, duplicates resolved, escapes and spacing
// normalised, invalid UTF-8 replaced) — the scanner may not depend on how a
// document is spelled, only on what it says.

// maxSeed leaves out large recordings: Go's fuzzer mutates big inputs very
// slowly, and the hand-written fixtures cover the same shapes.
const maxSeed = 16 << 10

// addSeeds adds every testdata file (up to maxSeed bytes) whose name has one of the prefixes.
func addSeeds(f *testing.F, prefixes ...string) {
	for _, p := range prefixes {
		files, _ := filepath.Glob(filepath.Join("testdata", p+"*"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err == nil && len(b) <= maxSeed {
				f.Add(b)
			}
		}
	}
}

// canonical re-encodes a JSON document through encoding/json; ok is false
// when encoding/json rejects it.
func canonical(b []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, false // trailing data
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

// sameOutcome fails when parsing b and its canonical form disagree.
func sameOutcome[T any](t *testing.T, b []byte, parse func([]byte) (T, Version, error)) {
	got, v, err := parse(b)
	canon, ok := canonical(b)
	if !ok {
		return
	}
	got2, v2, err2 := parse(canon)
	if (err == nil) != (err2 == nil) {
		t.Fatalf("error differs: original %v, canonical %v\ncanonical: %s", err, err2, canon)
	}
	if err != nil {
		return
	}
	if v != v2 {
		t.Fatalf("version differs: %+v vs %+v", v, v2)
	}
	if !reflect.DeepEqual(got, got2) {
		t.Fatalf("result differs:\n%+v\n%+v\ncanonical: %s", got, got2, canon)
	}
}

// sameAsParallel fails when the split reading of the job list differs from
// the sequential one in any way. mode is 0 (a second goroutine) or
// splitInline (the second half read first on this goroutine: deterministic,
// for the fuzz targets, whose coverage must not depend on scheduling).
func sameAsParallel(t *testing.T, b []byte, parse func([]byte, int) ([]provisioner.Job, []Skipped, Version, error), mode int) {
	seq, sk1, v1, err1 := parse(b, math.MaxInt)
	par, sk2, v2, err2 := parse(b, mode)
	if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
		t.Fatalf("errors differ: sequential %v, parallel %v", err1, err2)
	}
	if v1 != v2 || !reflect.DeepEqual(seq, par) {
		t.Fatalf("results differ:\n%+v\n%+v", seq, par)
	}
	if fmt.Sprint(sk1) != fmt.Sprint(sk2) {
		t.Fatalf("skipped elements differ:\n%v\n%v", sk1, sk2)
	}
}

func FuzzParseSqueueJSON(f *testing.F) {
	addSeeds(f, "squeue-", "fail-slurmctld-squeue")
	f.Add([]byte(`{"meta":{"Slurm":{"version":{"major":22,"minor":5}}},"jobs":[{"job_id":1,"job_state":"RUNNING","nodes":"n[1-2]"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sameOutcome(t, b, ParseSqueueJSON)
		jobs, _, err := ParseSqueueJSON(b)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.ID == "" {
				t.Fatalf("job without id: %+v", j)
			}
			if j.State == provisioner.StatePending && (!j.Start.IsZero() || j.NodeList != nil) {
				t.Fatalf("pending job with a start or nodes: %+v", j)
			}
			if j.GPUs < 0 || j.Nodes < 0 || j.TimeLimit < 0 {
				t.Fatalf("negative count: %+v", j)
			}
		}
	})
}

func FuzzParseSacctJSON(f *testing.F) {
	addSeeds(f, "sacct-")
	f.Fuzz(func(t *testing.T, b []byte) {
		sameOutcome(t, b, ParseSacctJSON)
	})
}

// FuzzSplitJobList checks that reading a job list in two halves (the path
// taken for large documents) gives exactly the sequential result, for any
// input: the guessed split point may fall anywhere, even inside a string.
func FuzzSplitJobList(f *testing.F) {
	addSeeds(f, "squeue-2", "sacct-2")
	f.Add([]byte(`{"meta":{"slurm":{"release":"24.05.1"}},"jobs":[{"job_id":1,"name":"a"},{"job_id":2,"name":"{\"job_id\":3}"},{"job_id":4},{"job_id":5}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsParallel(t, b, parseSqueueJSON, splitInline)
		sameAsParallel(t, b, parseSacctJSON, splitInline)
	})
}

func FuzzParseSinfoJSON(f *testing.F) {
	addSeeds(f, "sinfo-", "fail-slurmctld-sinfo")
	f.Fuzz(func(t *testing.T, b []byte) {
		sameOutcome(t, b, ParseSinfoJSON)
		nodes, _, err := ParseSinfoJSON(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range nodes {
			if seen[n.Name] {
				t.Fatalf("node %q listed twice", n.Name)
			}
			seen[n.Name] = true
		}
	})
}

func FuzzParseSqueueText(f *testing.F) {
	addSeeds(f, "squeue-22")
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ParseSqueueText(b, time.UTC)
		if err == nil && len(jobs) > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d jobs from %d lines", len(jobs), bytes.Count(b, []byte("\n"))+1)
		}
	})
}

func FuzzParseSacctParsable(f *testing.F) {
	addSeeds(f, "sacct-22.05.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ParseSacctParsable(b, time.UTC)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if strings.Contains(j.ID, ".") {
				t.Fatalf("step %q kept", j.ID)
			}
		}
	})
}

func FuzzParseScontrolJob(f *testing.F) {
	addSeeds(f, "scontrol-")
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ParseScontrolJob(b)
		if err != nil {
			return
		}
		for _, r := range recs {
			if _, ok := r["JobId"]; !ok {
				t.Fatalf("record without JobId: %v", r)
			}
		}
	})
}

func FuzzParseStartText(f *testing.F) {
	addSeeds(f, "squeue-start-")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseStartText(b, time.UTC)
		if err != nil {
			return
		}
		for id, ts := range m {
			if id == "" || ts.IsZero() {
				t.Fatalf("entry %q -> %v", id, ts)
			}
		}
	})
}

func FuzzParseSbatch(f *testing.F) {
	for _, s := range []string{"42\n", "42;cluster\n", "sbatch: warning: x\n43\n", "", "abc", "-1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := ParseSbatch(b)
		if err == nil && (id == "" || strings.Trim(id, "0123456789") != "") {
			t.Fatalf("ParseSbatch(%q) = %q", b, id)
		}
	})
}

// FuzzLimitOf checks the time-limit columns: never negative, and what
// FormatDuration writes for sbatch --time reads back exactly.
func FuzzLimitOf(f *testing.F) {
	for _, s := range []string{"1:00", "5:00", "1:00:00", "2-03:04:05", "UNLIMITED", "10", "1-0", "-1", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := limitOf(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("limitOf(%q) = %v", s, d)
		}
		// What FormatDuration writes, limitOf reads back exactly.
		if d > 0 && d < 1<<50 {
			want := d.Truncate(time.Second)
			if want < d {
				want += time.Second // FormatDuration rounds up
			}
			back, err := limitOf(FormatDuration(d))
			if err != nil || back != want {
				t.Fatalf("round trip of %v: %q -> %v, %v", d, FormatDuration(d), back, err)
			}
		}
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"node[1-3,07]", "gpu01", "r[1-2]n[01-02]", "a[", "a]", "n[5-1]", "(null)", "x[0-99999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := expandHostlist(s)
		if err != nil {
			return
		}
		if len(names) > maxHostlist {
			t.Fatalf("%d names", len(names))
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[],") {
				t.Fatalf("expandHostlist(%q) gave %q", s, n)
			}
		}
	})
}

func FuzzParsePartitionsText(f *testing.F) {
	addSeeds(f, "sinfo-partitions-")
	f.Fuzz(func(t *testing.T, b []byte) {
		parts, err := ParsePartitionsText(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range parts {
			if p.Name == "" || seen[p.Name] {
				t.Fatalf("partition %q empty or twice", p.Name)
			}
			seen[p.Name] = true
		}
	})
}

func FuzzParseNodesText(f *testing.F) {
	addSeeds(f, "sinfo-nodes-")
	f.Fuzz(func(t *testing.T, b []byte) {
		nodes, err := ParseNodesText(b)
		if err != nil {
			return
		}
		for _, n := range nodes {
			if n.Name == "" {
				t.Fatal("node without a name")
			}
		}
	})
}

func FuzzParseVersionText(f *testing.F) {
	for _, s := range []string{"slurm-wlm 22.05.8\n", "slurm 24.11.1", "slurm", "x 1.2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseVersionText(b)
		if err == nil && v.Release == "" {
			t.Fatalf("ParseVersionText(%q) = %+v", b, v)
		}
	})
}

// FuzzSbatchArgs checks the argument list: every set field is exactly one
// argument, the script is last and follows "--", and nothing from the
// request can add an option of its own.
func FuzzSbatchArgs(f *testing.F) {
	f.Add("job", "/tmp/j.sh", "teama", "mirage:c1/0.0", "1", "K", "v", 2, 4)
	f.Add("$(touch x)", "-rf", "a b", "x;y", "", "A", "1,2", 0, 0)
	f.Fuzz(func(t *testing.T, name, script, account, comment, dep, envK, envV string, nodes, gpus int) {
		req := provisioner.SubmitRequest{Name: name, Script: script, Account: account, Comment: comment,
			Nodes: nodes, GPUs: gpus, Env: map[string]string{envK: envV}}
		if dep != "" {
			req.Dependency = slurmfmt.AfterAny(dep)
		}
		args, err := SbatchArgs(req, "")
		if err != nil {
			return
		}
		if len(args) < 3 || args[len(args)-1] != script || args[len(args)-2] != "--" {
			t.Fatalf("script not last after --: %q", args)
		}
		opts := args[1 : len(args)-2]
		for _, a := range opts {
			if !strings.HasPrefix(a, "--") || !strings.Contains(a, "=") {
				t.Fatalf("argument %q is not one --opt=value", a)
			}
		}
		for opt, v := range map[string]string{"--job-name=": name, "--account=": account, "--comment=": comment, "--dependency=": req.Dependency.String()} {
			if v != "" && !slices.Contains(opts, opt+v) {
				t.Fatalf("%s%q not passed verbatim: %q", opt, v, opts)
			}
		}
	})
}

// FuzzRejection checks that any stderr gives a one-line reason without panicking.
func FuzzRejection(f *testing.F) {
	addSeeds(f, "sbatch-", "fail-")
	f.Fuzz(func(t *testing.T, b []byte) {
		r := rejection(b)
		if strings.Contains(r, "\n") {
			t.Fatalf("reason %q spans lines", r)
		}
		classify("sbatch", b, nil)
	})
}

func FuzzParseConfig(f *testing.F) {
	addSeeds(f, "scontrol-config-")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseConfig(b)
		if err != nil {
			return
		}
		if len(m) == 0 {
			t.Fatal("no setting and no error")
		}
		for k, v := range m {
			if k == "" || strings.ContainsAny(k, " \t\r\n") || v == "(null)" {
				t.Fatalf("setting %q = %q", k, v)
			}
		}
	})
}

func FuzzParsePartitionRecords(f *testing.F) {
	addSeeds(f, "scontrol-partition-")
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := ParsePartitionRecords(b)
		if err != nil {
			return
		}
		for _, p := range ps {
			if _, ok := p["PartitionName"]; !ok {
				t.Fatalf("record without PartitionName: %v", p)
			}
		}
	})
}

func FuzzParseSacctmgr(f *testing.F) {
	addSeeds(f, "sacctmgr-")
	f.Fuzz(func(t *testing.T, b []byte) {
		if qos, err := ParseQOS(b); err == nil {
			for _, q := range qos {
				if q.Name == "" || q.Priority < 0 || q.MaxJobsAccruePerUser < 0 || q.MaxJobsAccruePerAccount < 0 || q.GrpJobsAccrue < 0 {
					t.Fatalf("QOS %+v", q)
				}
			}
		}
		if as, err := ParseAssociations(b); err == nil {
			for _, a := range as {
				if a.Account == "" || a.MaxJobsAccrue < 0 || a.GrpJobsAccrue < 0 {
					t.Fatalf("association %+v", a)
				}
			}
		}
	})
}

// FuzzSiteSlurmConf: whatever scontrol reported, the slurm.conf rendered
// is one setting per line, never a value cut or continued by a space, a
// comment or a line break.
func FuzzSiteSlurmConf(f *testing.F) {
	addSeeds(f, "scontrol-partition-")
	f.Add([]byte("PartitionName=p Nodes=n[1-2] MaxTime=1-00:00:00 State=UP Default=YES\n"))
	cfg := map[string]string{"PriorityType": "priority/multifactor", "PriorityWeightAge": "1000"}
	f.Fuzz(func(t *testing.T, b []byte) {
		parts, err := ParsePartitionRecords(b)
		if err != nil {
			return
		}
		s := &Site{Cluster: "c", Version: "v", Config: cfg, Partitions: parts, Nodes: []provisioner.Node{{Name: "n1", CPUs: 1, GPUs: 1}}}
		out, err := s.SlurmConf()
		if err != nil {
			return
		}
		for i, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if i == 0 {
				continue // the comment naming the cluster
			}
			for _, tok := range strings.Fields(l) {
				if !strings.Contains(tok, "=") || strings.Contains(l, "#") {
					t.Fatalf("line %q: token %q is no Key=Value", l, tok)
				}
			}
		}
	})
}
