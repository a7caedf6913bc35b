package traces

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readAll reads every job of path with opts.
func readAll(t *testing.T, path string, opts Options) ([]Job, Reader) {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { r.Close() })
	var jobs []Job
	for j, err := range All(r) {
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, r
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tt, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

func TestLS6Small(t *testing.T) {
	jobs, r := readAll(t, "testdata/ls6-small.log", Options{})
	if r.Format() != FormatLS6 {
		t.Fatalf("format %q, want ls6", r.Format())
	}
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(jobs))
	}
	// Hand-worked: 2022-11-01 is CDT (UTC-5); 2022-11-06 03:30 is CST (UTC-6).
	tests := []struct {
		id            string
		submit, start string
		runtime, wait time.Duration
		limit         time.Duration
		nodes, gpus   int
		state         State
		code, sig     int
		user, name    string
	}{
		{"100", "2022-11-01T14:59:00Z", "2022-11-01T15:00:00Z", 2 * time.Hour, time.Minute, 120 * time.Minute, 1, 3, StateTimeout, 0, 0, "00007", "train.1"},
		{"101", "2022-11-01T16:00:00Z", "2022-11-01T17:00:30Z", 10 * time.Minute, 3630 * time.Second, time.Hour, 2, 6, StateFailed, 1, 0, "00007", "train.2"},
		// crosses the end of DST: 23:30 CDT → 03:30 CST is 5 h, over the 270 min limit
		{"102", "2022-11-06T04:00:00Z", "2022-11-06T04:30:00Z", 5 * time.Hour, 30 * time.Minute, 270 * time.Minute, 4, 12, StateTimeout, 0, 9, "00042", "big"},
	}
	for i, tt := range tests {
		j := jobs[i]
		if j.ID != tt.id || !j.Submit.Equal(mustTime(t, tt.submit)) || !j.Start.Equal(mustTime(t, tt.start)) ||
			j.Runtime() != tt.runtime || j.Wait() != tt.wait || j.TimeLimit != tt.limit || j.Nodes != tt.nodes ||
			j.GPUs != tt.gpus || j.State != tt.state || j.ExitCode != tt.code || j.Signal != tt.sig || j.User != tt.user || j.Name != tt.name {
			t.Errorf("job %d = %+v (runtime %v wait %v), want %+v", i, j, j.Runtime(), j.Wait(), tt)
		}
	}
}

// corrupt writes a copy of src with an 11th field appended to data row k (1-based).
func corrupt(t *testing.T, src string, k int) (string, int) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	lines[2+k] = lines[2+k] + "\t810653"
	p := filepath.Join(t.TempDir(), "bad.log")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, 3 + k
}

func TestLS6Malformed(t *testing.T) {
	p, line := corrupt(t, "testdata/ls6-small.log", 2)
	r, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	var got error
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			got = err
			break
		}
		n++
	}
	var pe *ParseError
	if !errors.As(got, &pe) || !errors.Is(got, ErrMalformed) {
		t.Fatalf("error %v, want a *ParseError", got)
	}
	if pe.File != p || pe.Line != line || pe.Field != "row" || pe.Got != "11 fields" || n != 1 {
		t.Errorf("got %+v after %d jobs; want line %d, field row, 11 fields, after 1 job", pe, n, line)
	}
	want := p + ":5: field row: want 10 tab-separated fields, got \"11 fields\""
	if pe.Error() != want {
		t.Errorf("message %q, want %q", pe.Error(), want)
	}

	jobs, r2 := readAll(t, p, Options{SkipBad: true})
	if len(jobs) != 2 || r2.Skipped() != 1 || len(r2.Errors()) != 1 || jobs[1].ID != "102" {
		t.Errorf("SkipBad: %d jobs, %d skipped (%v); want 2 jobs, 1 skipped", len(jobs), r2.Skipped(), r2.Errors())
	}
}
