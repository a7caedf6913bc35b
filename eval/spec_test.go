package eval

import (
	"errors"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"strings"
	"testing"
)

func TestSpecExperiment(t *testing.T) {
	t.Parallel()
	none := func(string) bool { return false }
	e, err := (&Spec{Traces: []string{"t.csv"}, Policies: []string{"reactive"}, Out: "o", From: "2023-02-01", Cell: -1}).Experiment(none)
	if err != nil || e.From.String() != "2023-02-01T00:00:00" || e.Out != "o" || len(e.LoadScales) != 1 {
		t.Fatalf("%+v, %v", e, err)
	}
	for _, c := range []struct {
		spec    Spec
		changed func(string) bool
		msg     string
	}{
		{Spec{Traces: []string{"t"}, Policies: []string{"reactive"}, Cell: -1}, none, "need --trace, --policies and --out"},
		{Spec{Cell: 2}, none, "--cell and --emit-array need --sweep"},
		{Spec{Traces: []string{"t"}, Policies: []string{"reactive"}, Out: "o", Until: "soon", Cell: -1}, none, `--until "soon": want RFC 3339 or YYYY-MM-DD[THH:MM[:SS]] (in the trace's zone)`},
		{Spec{Sweep: "s.yaml", Cell: -1}, func(f string) bool { return f == "seed" }, "--seed cannot be combined with --sweep"},
	} {
		_, err := c.spec.Experiment(c.changed)
		if !errors.Is(err, protocol.ErrBadSetup) || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want ErrBadSetup %q", c.spec, err, c.msg)
		}
	}
	if _, err := (&Spec{Sweep: "/nonexistent/s.yaml", Cell: -1}).Experiment(none); !errors.Is(err, ErrBadSweep) {
		t.Errorf("missing sweep: %v", err)
	}
}
