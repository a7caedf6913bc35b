package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestEditDistance: Levenshtein distances worked out by hand.
func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"actve", "active", 1}, {"json", "json", 0}} {
		if got := EditDistance(c.a, c.b); got != c.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestExitCode: the code of each kind of error, and the message printed.
func TestExitCode(t *testing.T) {
	codes := append(Kinds(ExitBadInput, fs.ErrNotExist), Kinds(ExitUnavailable, fs.ErrClosed)...)
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("x"), ExitFailure},
		{&FlagError{errors.New("x")}, ExitUsage},
		{fmt.Errorf("run: %w", context.Canceled), ExitInterrupted},
		{Coded(fmt.Errorf("open: %w", fs.ErrNotExist), codes), ExitBadInput},
		{Coded(fmt.Errorf("use: %w", fs.ErrClosed), codes), ExitUnavailable},
		{Coded(WithCode(ExitRejected, fs.ErrNotExist), codes), ExitRejected}, // a code given first is kept
	} {
		var buf bytes.Buffer
		if got := ExitCode(c.err, &buf); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
		if (c.err == nil) != (buf.Len() == 0) {
			t.Errorf("ExitCode(%v) printed %q", c.err, buf.String())
		}
	}
	if WithCode(ExitUsage, nil) != nil {
		t.Error("WithCode(nil) is not nil")
	}
}
