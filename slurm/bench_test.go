package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// genSqueueJSON builds an n-job `squeue --json` document from the job
// records of a recorded one (cycling through them, each with a fresh job
// id), so size and shape are those of real Slurm output.
func genSqueueJSON(tb testing.TB, recorded string, n int) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", recorded))
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Meta json.RawMessage   `json:"meta"`
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatal(err)
	}
	idRE := regexp.MustCompile(`"job_id": ?[0-9]+`)
	var b bytes.Buffer
	b.WriteString(`{"meta":`)
	b.Write(doc.Meta)
	b.WriteString(",\n\"errors\": [],\n\"jobs\": [\n")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		j := doc.Jobs[i%len(doc.Jobs)]
		j = idRE.ReplaceAllLiteral(j, fmt.Appendf(nil, `"job_id": %d`, 100000+i))
		b.Write(j)
	}
	b.WriteString("\n]\n}\n")
	return b.Bytes()
}

func TestGeneratedDocumentParses(t *testing.T) {
	doc := genSqueueJSON(t, "squeue-22.05.json", 1000)
	jobs, _, err := ParseSqueueJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	// 1000 records from 11 templates; array tasks keep their array ids, the
	// rest get fresh ids 100000+i.
	if len(jobs) != 1000 || jobs[0].ID != "100000" || jobs[0].Name != "timeout" {
		t.Fatalf("%d jobs, first %+v", len(jobs), jobs[0])
	}
}

func TestParallelReadingMatchesSequential(t *testing.T) {
	// Whole generated documents of both shapes, and the same with the
	// second half broken (the parallel guess must then give way to the
	// sequential error), parse the same with one goroutine or two.
	for _, rec := range []string{"squeue-22.05.json", "squeue-24.11.json"} {
		doc := genSqueueJSON(t, rec, 3000)
		broken := bytes.Clone(doc)
		i := bytes.LastIndex(broken, []byte(`"job_id"`))
		broken[i+1] = 'X' // "Xob_id": an unknown key, still valid
		broken2 := bytes.Clone(broken)
		broken2[len(broken2)*3/4] = '}' // a syntax error in the second half
		for _, mode := range []int{0, splitInline} {
			sameAsParallel(t, doc, parseSqueueJSON, mode)
			sameAsParallel(t, broken, parseSqueueJSON, mode)
			sameAsParallel(t, broken2, parseSqueueJSON, mode)
		}
		seq, _, _, _ := parseSqueueJSON(doc, math.MaxInt)
		if len(seq) != 3000 {
			t.Fatalf("%s: %d jobs", rec, len(seq))
		}
	}
	sacct := genSacctJSON(t, 3000)
	sameAsParallel(t, sacct, parseSacctJSON, 0)
	sameAsParallel(t, sacct, parseSacctJSON, splitInline)
}

// genSacctJSON repeats the recorded sacct --json jobs n times.
func genSacctJSON(tb testing.TB, n int) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "sacct-22.05.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Meta json.RawMessage   `json:"meta"`
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(`{"meta":`)
	b.Write(doc.Meta)
	b.WriteString(`,"jobs":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.Write(doc.Jobs[i%len(doc.Jobs)])
	}
	b.WriteString("]}")
	return b.Bytes()
}

// BenchmarkParseSqueueJSON parses a generated 50,000-job squeue --json
// document of Slurm 22.05's shape (about 170 MB, pretty-printed like the
// real output). Target: under 200 ms per parse on the 2-core CI machine.
func BenchmarkParseSqueueJSON(b *testing.B) {
	doc := genSqueueJSON(b, "squeue-22.05.json", 50000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		jobs, _, err := ParseSqueueJSON(doc)
		if err != nil || len(jobs) != 50000 {
			b.Fatal(len(jobs), err)
		}
	}
}

// BenchmarkParseSqueueJSON2411 is the same for the 24.11 shape ({set,
// infinite,number} objects, state lists), from the hand-written fixture.
func BenchmarkParseSqueueJSON2411(b *testing.B) {
	doc := genSqueueJSON(b, "squeue-24.11.json", 50000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		jobs, _, err := ParseSqueueJSON(doc)
		if err != nil || len(jobs) != 50000 {
			b.Fatal(len(jobs), err)
		}
	}
}

// BenchmarkDecodeSqueueJSONStdlib decodes the same 50,000-job document into
// minimal structs with encoding/json, for comparison with the scanner.
func BenchmarkDecodeSqueueJSONStdlib(b *testing.B) {
	doc := genSqueueJSON(b, "squeue-22.05.json", 50000)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		var d struct {
			Jobs []struct {
				JobID     int64  `json:"job_id"`
				Name      string `json:"name"`
				JobState  string `json:"job_state"`
				Nodes     string `json:"nodes"`
				TresAlloc string `json:"tres_alloc_str"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(doc, &d); err != nil || len(d.Jobs) != 50000 {
			b.Fatal(err)
		}
	}
}
