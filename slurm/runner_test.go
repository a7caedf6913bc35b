package slurm

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// cappedBuffer gives back exactly what was written, across its chunks, in
// writes of any size (one larger than a chunk), and refuses the write that
// would pass the cap, calling over once.
func TestCappedBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, total := range []int{0, 1, firstChunk, firstChunk + 1, 3*maxChunk + 12345} {
		var want bytes.Buffer
		c := &cappedBuffer{max: int64(total), over: func() { t.Fatal("over called within the cap") }}
		for want.Len() < total {
			n := min(rng.IntN(70_000)+1, total-want.Len())
			if want.Len() == 0 && total > maxChunk {
				n = maxChunk + 7 // one write larger than a chunk
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			want.Write(p)
			if k, err := c.Write(p); k != n || err != nil {
				t.Fatalf("total %d: Write(%d bytes) = %d, %v", total, n, k, err)
			}
		}
		if got := c.Bytes(); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("total %d: got %d bytes back, want %d (equal: false)", total, len(got), want.Len())
		}
		if got := c.Bytes(); len(got) != total { // twice: joined once, kept
			t.Fatalf("total %d: second Bytes has %d", total, len(got))
		}
	}
	overs := 0
	c := &cappedBuffer{max: 10, over: func() { overs++ }}
	if _, err := c.Write(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if k, err := c.Write(make([]byte, 3)); k != 0 || !errors.Is(err, ErrOutputLimit) {
			t.Fatalf("past the cap: %d, %v", k, err)
		}
	}
	if overs != 1 || len(c.Bytes()) != 8 {
		t.Errorf("over called %d times (want 1), %d bytes kept (want 8)", overs, len(c.Bytes()))
	}
}

// A streamed read (lines spooled, parsed once counted) reads exactly what
// a whole read of the same output does: the same jobs, in order, and the
// same lines skipped under the same numbers.
func FuzzRowParserSpool(f *testing.F) {
	f.Add(readTestdata(f, "sacct-24.11.txt"))
	f.Add("1|a\n\n  \r\n2" + strings.Repeat(Sep, 3) + "\nx")
	f.Fuzz(func(t *testing.T, out string) {
		b := []byte(out)
		whole := newRowParser(time.UTC, sacctSafeCols, sacctRow, countLines(b))
		whole.feed(b)
		streamed := newRowParser(time.UTC, sacctSafeCols, sacctRow, 0)
		for l := range strings.SplitSeq(out, "\n") {
			streamed.line([]byte(l))
		}
		wj, sj := whole.jobs(), streamed.jobs()
		if !reflect.DeepEqual(wj, sj) {
			t.Fatalf("whole read %d jobs, streamed %d, or they differ", len(wj), len(sj))
		}
		if len(whole.skipped) != len(streamed.skipped) || whole.n != streamed.n {
			t.Fatalf("skipped %d vs %d, lines %d vs %d", len(whole.skipped), len(streamed.skipped), whole.n, streamed.n)
		}
		for i := range whole.skipped {
			if w, s := whole.skipped[i], streamed.skipped[i]; w.Line != s.Line || w.ID != s.ID {
				t.Fatalf("skipped %d: line %d (%q) vs line %d (%q)", i, w.Line, w.ID, s.Line, s.ID)
			}
		}
	})
}
