package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
)

// testFactory is the real world for one test, but with an empty
// environment (plus env), no terminal and empty input: each test builds
// its own, so tests run in parallel.
func testFactory(env map[string]string) *Factory {
	f := newFactory()
	f.In = strings.NewReader("")
	f.Out, f.ErrOut = io.Discard, io.Discard
	f.IsTerminal = func(any) bool { return false }
	f.Getenv = func(k string) string { return env[k] }
	return f
}

// runWith runs the command tree on f with args and returns stdout, stderr
// and the exit code.
func runWith(t *testing.T, f *Factory, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	g := *f
	g.Out, g.ErrOut = &out, &errb
	err := execute(context.Background(), newRootCmd(&g), args)
	code := cmdutil.ExitCode(err, &errb)
	return out.String(), errb.String(), code
}

// runMirage runs the command tree in a fresh test world.
func runMirage(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runWith(t, testFactory(nil), args...)
}
