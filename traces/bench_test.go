package traces

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// BenchmarkReadLS6 measures the LS6 reader in rows per second: on the real
// shared gzip file (skipped when absent) and on an in-memory synthetic
// LS6-format buffer (no shared data needed), plain and gzipped.
func BenchmarkReadLS6(b *testing.B) {
	b.Run("shared-gz", func(b *testing.B) {
		data, err := os.ReadFile(ls6Path(b))
		if err != nil {
			b.Fatal(err) // it exists (ls6Path): unreadable is a failure
		}
		benchRead(b, data)
	})
	jobs, err := Synth("ls6", 120, 1)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteLS6(&buf, jobs); err != nil {
		b.Fatal(err)
	}
	b.Run("synthetic", func(b *testing.B) { benchRead(b, buf.Bytes()) })
}

func benchRead(b *testing.B, data []byte) {
	b.ReportAllocs()
	rows := 0
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench", Options{Format: FormatLS6})
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows++
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
}
