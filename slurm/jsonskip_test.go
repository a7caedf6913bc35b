package slurm

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// A jobs element that is well-formed JSON but not a record this reader
// understands costs that element only: it is skipped, named by its job id
// and counted; the elements around it are read; the sequential and the
// two-goroutine reads agree. Broken JSON still fails the document.
func TestJSONSkipsOddRecord(t *testing.T) {
	job := func(id, limit, name string) string {
		return `{"job_id":` + id + `,"time_limit":` + limit + `,"name":"` + name + `","user_name":"alice","job_state":"RUNNING","nodes":"n1"}`
	}
	var elems []string
	for i := 1; i <= 40; i++ {
		limit, name := `{"set":true,"infinite":false,"number":60}`, "ok"
		switch i { // one in each half of the list
		case 7:
			limit = `[60]` // a list where a number belongs
		case 33:
			name = "a\x01b" // a raw control character another user's job name might carry
		}
		elems = append(elems, job(strconv.Itoa(i), limit, name))
	}
	doc := []byte(`{"meta":{"Slurm":{"version":{"major":24,"minor":11}}},"jobs":[` + strings.Join(elems, ",") + `]}`)
	for _, mode := range []int{math.MaxInt, splitInline, 0} {
		jobs, skipped, _, err := parseSqueueJSON(doc, mode)
		if err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		if len(jobs) != 38 {
			t.Errorf("mode %d: %d jobs, want 38", mode, len(jobs))
		}
		for _, j := range jobs {
			if j.ID == "7" || j.ID == "33" {
				t.Errorf("mode %d: the odd record %s was read: %+v", mode, j.ID, j)
			}
		}
		if len(skipped) != 2 || skipped[0].ID != "7" || skipped[1].ID != "33" || skipped[0].Cmd != "squeue --json" {
			t.Errorf("mode %d: skipped %v, want jobs 7 and 33 of squeue --json", mode, skipped)
		}
	}
	sameAsParallel(t, doc, parseSqueueJSON, splitInline)

	// A skipped element carrying a mirage tag may be one of the user's
	// chain jobs: the read fails rather than leave it out. So does a
	// document none of whose elements read.
	tagged := strings.Replace(string(doc), `"job_id":7,`, `"job_id":7,"comment":"mirage:c-1/0.0",`, 1)
	if _, _, _, err := parseSqueueJSON([]byte(tagged), math.MaxInt); err == nil {
		t.Error("an unreadable element carrying a mirage tag was skipped")
	}
	allBad := []byte(`{"meta":{"Slurm":{"version":{"major":24,"minor":11}}},"jobs":[` + job("1", "[1]", "x") + `,` + job("2", "[2]", "y") + `]}`)
	if _, _, _, err := parseSqueueJSON(allBad, math.MaxInt); err == nil {
		t.Error("a document none of whose elements read was taken as an empty queue")
	}

	broken := []byte(`{"meta":{"Slurm":{"version":{"major":24,"minor":11}}},"jobs":[` + job("1", "60", "ok") + `,{"job_id":2,"name":"x]}`)
	if _, _, _, err := parseSqueueJSON(broken, math.MaxInt); err == nil {
		t.Error("broken JSON read without an error")
	}
}
