package modeltest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/testobs"
)

// ModelMemory measures the saved size and the live heap of a model
// loaded from its directory (what a daemon holds per loaded model) and
// returns a function that reports them; call it after the timed loop
// (ResetTimer and b.Loop drop metrics reported earlier).
func ModelMemory(b *testing.B, m models.Model) func() {
	b.Helper()
	dir := b.TempDir()
	if err := models.Save(dir, m); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, m.Meta().ModelFile))
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	back, err := models.Load(dir, m.Meta().Schema)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(back)
	size, heap := float64(fi.Size())/1024, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024
	return func() {
		b.ReportMetric(size, "file-KiB")
		b.ReportMetric(heap, "heap-KiB")
	}
}

// Schema is a synthetic schema of w fields (x0, x1, …), matching testobs.Synth's width.
func Schema(w int) features.SchemaID {
	return features.SchemaID{Name: "synthetic", Version: 1, Fields: testobs.Fields(w)}
}
