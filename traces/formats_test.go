package traces

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sameJob compares every field, times by instant.
func sameJob(a, b Job) bool {
	ta := []time.Time{a.Submit, a.Eligible, a.Start, a.End}
	tb := []time.Time{b.Submit, b.Eligible, b.Start, b.End}
	for i := range ta {
		if !ta[i].Equal(tb[i]) {
			return false
		}
	}
	a.Submit, a.Eligible, a.Start, a.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	b.Submit, b.Eligible, b.Start, b.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestFormats(t *testing.T) {
	u := func(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
	tests := []struct {
		file   string
		format Format
		want   []Job
	}{
		{"parsable2.txt", FormatParsable, []Job{
			// 11: limit 60 min, ran 10:00:05–11:00:05 = 60 min; gres/gpu:a100=2; signal 15; step 11.batch skipped.
			{ID: "11", Name: "train", User: "alice", Account: "teamA", Partition: "gpu", Submit: utc("2024-03-01T10:00:00"),
				Eligible: utc("2024-03-01T10:00:00"), Start: utc("2024-03-01T10:00:05"), End: utc("2024-03-01T11:00:05"),
				TimeLimit: time.Hour, Nodes: 1, GPUs: 2, GPUType: "a100", State: StateTimeout, Signal: 15, Priority: 4294},
			{ID: "12", Name: "eval", User: "bob", Account: "teamB", Partition: "gpu", Submit: utc("2024-03-01T10:30:00"),
				Eligible: utc("2024-03-01T10:40:00"), State: StatePending, Priority: 100},
			{ID: "13", Name: "inf", User: "alice", Account: "teamA", Partition: "gpu", Submit: utc("2024-03-01T10:31:00"),
				Eligible: utc("2024-03-01T10:31:00"), Start: utc("2024-03-01T10:32:00"), End: utc("2024-03-01T10:33:30"),
				Nodes: 2, GPUs: 4, State: StateCancelled, Priority: 50},
		}},
		{"sacct-22.05.json", FormatSacctJSON, []Job{
			// 1709287200 = 2024-03-01T10:00:00Z
			{ID: "21", Name: "train", User: "alice", Account: "teamA", Partition: "gpu", Submit: u(1709287200), Eligible: u(1709287200),
				Start: u(1709287205), End: u(1709287805), TimeLimit: time.Hour, Nodes: 1, GPUs: 2, CPUs: 4, State: StateCompleted, Priority: 4294},
		}},
		{"sacct-23.11.json", FormatSacctJSON, []Job{
			{ID: "31", Name: "big", User: "bob", Account: "teamB", Partition: "gpu", Submit: u(1709287100), Eligible: u(1709287200),
				Start: u(1709287200), End: u(1709294400), TimeLimit: 2 * time.Hour, Nodes: 2, GPUs: 8, GPUType: "h100", CPUs: 16,
				State: StateTimeout, Signal: 9, Priority: 77},
			// infinite limit reads as 0; start 0 is unknown
			{ID: "32", Name: "inf", User: "bob", Submit: u(1709287300), Eligible: u(1709287300), State: StatePending, Priority: 5},
		}},
		{"small.swf", FormatSWF, []Job{
			{ID: "1", User: "3", Account: "1", Partition: "2", Submit: u(1000000000), Start: u(1000000010), End: u(1000000110),
				TimeLimit: 200 * time.Second, Nodes: 4, State: StateCompleted},
			// wait -1: start = submit; ran 300 s of 300 s: TIMEOUT; nodes from requested procs
			{ID: "2", User: "4", Account: "2", Submit: u(1000000050), Start: u(1000000050), End: u(1000000350),
				TimeLimit: 300 * time.Second, Nodes: 8, State: StateTimeout},
			{ID: "3", Submit: u(1000000060), Start: u(1000000065), Nodes: 2, State: StateCancelled},
		}},
		{"openb-pods.csv", FormatOpenB, []Job{
			{ID: "p0", Partition: "LS", Submit: u(0), Start: u(0), End: u(100), Nodes: 1, GPUs: 1, CPUs: 12, State: StateRunning},
			{ID: "p1", Partition: "BE", Submit: u(10), Start: u(12), End: u(70), Nodes: 1, GPUs: 1, GPUMilli: 460, GPUType: "V100M16|V100M32", CPUs: 6, State: StateFailed},
			{ID: "p2", Partition: "Burstable", Submit: u(20), Nodes: 1, CPUs: 1, State: StatePending},
			{ID: "p3", Partition: "LS", Submit: u(40), Start: u(50), End: u(1040), Nodes: 1, GPUs: 8, CPUs: 64, State: StateCompleted},
		}},
		{"helios.csv", FormatHelios, []Job{
			{ID: "h1", Name: "train", User: "uA", Account: "vc6YE", Submit: utc("2020-05-01T00:00:00"), Start: utc("2020-05-01T00:00:10"),
				End: utc("2020-05-01T01:00:10"), Nodes: 1, GPUs: 8, CPUs: 48, State: StateCompleted},
			{ID: "h2", Name: "eval", User: "uB", Account: "vcJkd", Submit: utc("2020-05-01T00:05:00"), Nodes: 1, GPUs: 1, CPUs: 6, State: StateCancelled},
			{ID: "h3", Name: "big", User: "uA", Account: "vc6YE", Submit: utc("2020-05-01T00:10:00"), Start: utc("2020-05-01T00:30:00"),
				End: utc("2020-05-01T00:31:00"), Nodes: 2, GPUs: 16, CPUs: 96, State: StateFailed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, r := readAll(t, filepath.Join("testdata", tt.file), Options{})
			if r.Format() != tt.format {
				t.Errorf("sniffed %q, want %q", r.Format(), tt.format)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d jobs, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if !sameJob(got[i], tt.want[i]) {
					t.Errorf("job %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
			// Canonical CSV round trip is exact.
			out := filepath.Join(t.TempDir(), "out.csv")
			r2, _ := Open(filepath.Join("testdata", tt.file), Options{})
			defer r2.Close()
			if n, err := Convert(r2, out); err != nil || n != len(got) {
				t.Fatalf("Convert: %d, %v", n, err)
			}
			back, r3 := readAll(t, out, Options{})
			if r3.Format() != FormatCSV || len(back) != len(got) {
				t.Fatalf("read back %d jobs as %q", len(back), r3.Format())
			}
			for i := range back {
				if !sameJob(back[i], got[i]) {
					t.Errorf("CSV round trip of job %d:\n got %+v\nwant %+v", i, back[i], got[i])
				}
			}
		})
	}
}

func TestReadNodes(t *testing.T) {
	nodes, err := ReadNodes("testdata/openb-nodes.csv")
	want := []Node{{"n0", 64000, 262144, 2, "P100"}, {"n1", 96000, 786432, 8, "G2"}, {"n2", 32000, 131072, 0, ""}}
	if err != nil || len(nodes) != 3 || nodes[0] != want[0] || nodes[1] != want[1] || nodes[2] != want[2] {
		t.Errorf("ReadNodes = %+v, %v", nodes, err)
	}
	if _, err := Open("testdata/openb-nodes.csv", Options{}); err == nil {
		t.Errorf("Open of a node list succeeded")
	}
}

func TestSacctJSONUnknownVersion(t *testing.T) {
	r, err := Open("testdata/sacct-19.05.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Next(); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("Next = %v, want ErrUnsupportedVersion", err)
	}
}

func TestMalformedRows(t *testing.T) {
	tests := []struct {
		name, content string
		format        Format
		line          int
		field         string
	}{
		{"ls6 bad time", "4\nJobID JobName\n---- ----\n1\tn\t1\t2022-13-01T00:00:00\t2022-11-01T00:00:00\t2022-11-01T00:00:00\t1\t1\t0:0\t1\n", FormatLS6, 4, "Start"},
		{"ls6 bad nodes", "4\nJobID JobName\n---- ----\n1\tn\t1\t2022-11-01T00:00:00\t2022-11-01T00:00:00\t2022-11-01T00:00:00\t1\t1\t0:0\tx\n", FormatLS6, 4, "NNodes"},
		{"ls6 bad exit", "4\nJobID JobName\n---- ----\n1\tn\t1\t2022-11-01T00:00:00\t2022-11-01T00:00:00\t2022-11-01T00:00:00\t1\t1\tok\t1\n", FormatLS6, 4, "ExitCode"},
		{"parsable bad limit", "JobID|TimelimitRaw\n1|10\n2|ten\n", FormatParsable, 3, "TimelimitRaw"},
		{"parsable short row", "JobID|State|NNodes\n1|COMPLETED\n", FormatParsable, 2, "row"},
		{"swf 17 fields", "; x\n1 0 10 100 4 -1 -1 4 200 -1 1 3 1 -1 2 -1 -1\n", FormatSWF, 2, "row"},
		{"swf bad run", "1 0 10 1x0 4 -1 -1 4 200 -1 1 3 1 -1 2 -1 -1 -1\n", FormatSWF, 1, "run"},
		{"openb bad gpu", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1000\nq,1,1,two,0\n", FormatOpenB, 3, "num_gpu"},
		{"helios end before start", "job_id,submit_time,start_time,end_time\nh,2020-05-01 00:00:00,2020-05-01 00:10:00,2020-05-01 00:05:00\n", FormatHelios, 2, "end_time"},
		{"json bad type", `{"jobs":[{"job_id":1},{"job_id":2,"name":5}]}`, FormatSacctJSON, 2, "jobs[1].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader([]byte(tt.content)), "x", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tt.format {
				t.Fatalf("sniffed %q, want %q", r.Format(), tt.format)
			}
			var pe *ParseError
			for {
				_, err := r.Next()
				if err == nil {
					continue
				}
				if !errors.As(err, &pe) {
					t.Fatalf("error %v, want a *ParseError", err)
				}
				break
			}
			if pe.File != "x" || pe.Line != tt.line || pe.Field != tt.field {
				t.Errorf("got %v (line %d field %q), want line %d field %q", pe, pe.Line, pe.Field, tt.line, tt.field)
			}
		})
	}
}

func TestGzipAndOverride(t *testing.T) {
	raw, err := os.ReadFile("testdata/ls6-small.log")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	p := filepath.Join(t.TempDir(), "x.gz")
	os.WriteFile(p, buf.Bytes(), 0o644)
	jobs, r := readAll(t, p, Options{})
	if len(jobs) != 3 || r.Format() != FormatLS6 {
		t.Errorf("gzip: %d jobs as %q", len(jobs), r.Format())
	}
	// Reading the LS6 file as SWF fails on line 1 (not 18 fields).
	r2, err := Open("testdata/ls6-small.log", Options{Format: FormatSWF})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := r2.Next(); !errors.Is(err, ErrMalformed) {
		t.Errorf("override: %v", err)
	}
	if _, err := Open("testdata/ls6-small.log", Options{Format: "nope"}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("bad format name: %v", err)
	}
	if _, err := NewReader(bytes.NewReader([]byte("hello world\n")), "y", Options{}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unrecognisable content: %v", err)
	}
}
