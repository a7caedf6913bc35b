package term

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.Open(os.DevNull) // a character device, not a terminal
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(f) || IsTerminal(null) || IsTerminal(&bytes.Buffer{}) || IsTerminal(nil) {
		t.Error("a file, /dev/null, a buffer or nil taken for a terminal")
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := NewProgress(&b, "train")
	p.Update(1, 4)
	p.Update(1, 4) // same percentage: not redrawn
	p.SetLabel("valid")
	p.Update(4, 4)
	p.Done()
	want := "\r[######...................]  25% train (1/4)\033[K" +
		"\r[#########################] 100% valid (4/4)\033[K" + "\r\033[K"
	if b.String() != want {
		t.Errorf("drew %q\nwant %q", b.String(), want)
	}
	b.Reset()
	p = NewProgress(&b, "")
	p.Fraction(1.5, "2023-01-02")
	if want := "\r[#########################] 100% 2023-01-02\033[K"; b.String() != want {
		t.Errorf("fraction drew %q, want %q", b.String(), want)
	}
	var silent *Progress
	silent.Update(1, 2)
	silent.Done()
	q := NewProgress(nil, "x")
	q.Update(1, 2)
	q.Fraction(0.5, "")
	q.Done()
}
