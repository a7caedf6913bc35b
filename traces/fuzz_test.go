package traces

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// fuzzReader feeds data to the reader of format (FormatAuto: sniffing) with
// and without SkipBad and checks the reader's contract: no panic, a
// malformed row is a *ParseError naming a line and field, SkipBad never
// returns a row-level ParseError, and no impossible job comes out.
func fuzzReader(f *testing.F, format Format, seedFiles []string, seeds ...string) {
	for _, p := range seedFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			r, err := NewReader(bytes.NewReader(data), "fuzz", Options{Format: format, SkipBad: skip})
			if err != nil {
				if format != FormatAuto && !errors.Is(err, ErrUnknownFormat) {
					// only gzip errors are possible here
					if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
						t.Fatalf("NewReader: %v", err)
					}
				}
				continue
			}
			for n := 0; ; n++ {
				j, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					var pe *ParseError
					if errors.As(err, &pe) {
						if pe.File != "fuzz" || pe.Line < 1 || pe.Field == "" || pe.Want == "" {
							t.Fatalf("incomplete ParseError %+v", pe)
						}
						if skip && !pe.fatal {
							t.Fatalf("SkipBad returned a row error: %v", err)
						}
					}
					break
				}
				if j.Nodes < 0 || j.GPUs < 0 || j.TimeLimit < 0 || j.CPUs < 0 || j.GPUMilli < 0 || j.GPUMilli >= 1000 {
					t.Fatalf("impossible job %+v", j)
				}
				if n > len(data) {
					t.Fatalf("more jobs (%d) than input bytes (%d)", n, len(data))
				}
			}
			if r.Skipped() < len(r.Errors()) || len(r.Errors()) > MaxKeptErrors {
				t.Fatalf("skipped %d, kept %d errors", r.Skipped(), len(r.Errors()))
			}
			r.Close()
		}
	})
}

func FuzzLS6(f *testing.F) {
	fuzzReader(f, FormatLS6, []string{"testdata/ls6-small.log"},
		"3\nJobID\n--\n1\ta\t1\t2022-11-01T00:00:00\t2022-11-01T00:00:00\t2022-11-01T00:00:01\t1\t1\t0:0\t1\t9\n")
}

func FuzzParsable(f *testing.F) {
	fuzzReader(f, FormatParsable, []string{"testdata/parsable2.txt"}, "JobID|Timelimit|AllocTRES\n1|1-02:03:04|gres/gpu:a=1\n2|5:00|x\n")
}

func FuzzSacctJSON(f *testing.F) {
	fuzzReader(f, FormatSacctJSON, []string{"testdata/sacct-22.05.json", "testdata/sacct-23.11.json", "testdata/sacct-19.05.json"},
		`{"jobs":[{"job_id":{"set":true,"number":3},"time":{"limit":-1}}]}`)
}

func FuzzSWF(f *testing.F) {
	fuzzReader(f, FormatSWF, []string{"testdata/small.swf"}, "; UnixStartTime: x\n1 2 3\n")
}

func FuzzOpenB(f *testing.F) {
	fuzzReader(f, FormatOpenB, []string{"testdata/openb-pods.csv"}, "name,num_gpu,gpu_milli\na,1,999\nb,\"2\n")
}

func FuzzHelios(f *testing.F) {
	fuzzReader(f, FormatHelios, []string{"testdata/helios.csv"}, "job_id,submit_time\n1,5\n2,2020-02-30 00:00:00\n")
}

func FuzzCSV(f *testing.F) {
	fuzzReader(f, FormatCSV, nil, "id,name,user,account,partition,submit,eligible,start,end,time_limit_s,nodes\n1,a,b,c,d,2024-01-01T00:00:00Z,,,,60,1\n")
}

// FuzzOpen exercises sniffing: any input is either refused as unknown or
// read by some reader under the same contract.
func FuzzOpen(f *testing.F) {
	fuzzReader(f, FormatAuto, []string{"testdata/ls6-small.log", "testdata/small.swf", "testdata/helios.csv", "testdata/openb-pods.csv",
		"testdata/parsable2.txt", "testdata/sacct-23.11.json"})
}
