package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records a Fatalf or Skipf and stops the
// goroutine as the real ones do (runtime.Goexit).
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder in its own goroutine (Goexit ends it).
func run(f func(tb testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// TestRequire: a missing resource skips outside CI and fails in CI, with
// the same message naming it and how to provide it; one that is there
// does neither. The expected messages are Require's documented format.
func TestRequire(t *testing.T) {
	const what, how = "the thing", "install it"
	for _, c := range []struct {
		ci         string
		ok         bool
		fatal, skp string
	}{
		{"", false, "", "the thing not available: install it"},
		{"false", false, "", "the thing not available: install it"},
		{"0", false, "", "the thing not available: install it"},
		{"true", false, "required in CI: the thing not available: install it", ""},
		{"1", false, "required in CI: the thing not available: install it", ""},
		{"true", true, "", ""},
		{"", true, "", ""},
	} {
		t.Setenv("CI", c.ci)
		r := run(func(tb testing.TB) { Require(tb, c.ok, what, how) })
		if r.fatal != c.fatal || r.skip != c.skp {
			t.Errorf("CI=%q ok=%v: fatal %q skip %q; want fatal %q skip %q", c.ci, c.ok, r.fatal, r.skip, c.fatal, c.skp)
		}
	}
}

// TestHelpersName what is missing: each per-resource helper, with its
// variable unset or its folder absent, fails in CI naming the variable or
// the folder.
func TestHelpersName(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("MIRAGE_TRACES", "")
	// no ../shared/traces up to three levels from here: the levels are the
	// test's own folders (the temporary folder's parents may hold one)
	deep := filepath.Join(t.TempDir(), "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	for _, c := range []struct {
		env, want string
		call      func(tb testing.TB)
	}{
		{"MIRAGE_TEST_SLURM_CONF", "MIRAGE_TEST_SLURM_CONF", func(tb testing.TB) { SlurmConf(tb) }},
		{"MIRAGE_TEST_KUBECONFIG", "MIRAGE_TEST_KUBECONFIG", func(tb testing.TB) { Kubeconfig(tb) }},
		{"MIRAGE_TEST_SECOND_USER", "MIRAGE_TEST_SECOND_USER", func(tb testing.TB) { SecondUser(tb) }},
		{"", "-tags \"libsqlite3 xgboost\"", func(tb testing.TB) { XGBoost(tb, false) }},
		{"", "../shared/traces", func(tb testing.TB) { SharedTraces(tb) }},
	} {
		if c.env != "" {
			t.Setenv(c.env, "")
		}
		r := run(c.call)
		if !strings.HasPrefix(r.fatal, "required in CI: ") || !strings.Contains(r.fatal, c.want) || r.skip != "" {
			t.Errorf("fatal %q, skip %q: want a failure naming %s", r.fatal, r.skip, c.want)
		}
	}
	// A second user named but absent from this machine is missing too.
	t.Setenv("MIRAGE_TEST_SECOND_USER", "mirage-no-such-user")
	if r := run(func(tb testing.TB) { SecondUser(tb) }); !strings.Contains(r.fatal, "user mirage-no-such-user does not exist") {
		t.Errorf("absent second user: fatal %q, skip %q", r.fatal, r.skip)
	}
}
