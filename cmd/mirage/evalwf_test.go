package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/eval/protocol"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
)

func TestEvalWalkForward(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t) // its synthetic trace
	cache := filepath.Join(t.TempDir(), "cache")
	args := []string{"eval", "walk-forward", "--trace", fx.trace, "--months", "2022-11-06,2022-11-08", "--until", "2022-11-10",
		"--nodes", "1,4", "--every", "12h", "--cycle", "30m", "--limit", "12h", "--warmup", "24h", "--policies", "xgb", "--replayed", "xgb-pin", "--retrain", "24h", "--cache", cache, "--json"}
	run := func() protocol.WFResult {
		out, stderr, code := runMirage(t, args...)
		if code != 0 {
			t.Fatalf("walk-forward: exit %d: %s", code, stderr)
		}
		var r protocol.WFResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return r
	}
	r := run()
	if len(r.Folds) != 2 {
		t.Fatalf("folds %+v: want 2", r.Folds)
	}
	scored := 0
	for _, f := range r.Folds {
		scored += f.Scored
		if f.Train == 0 || f.Scored == 0 {
			t.Errorf("fold %+v: want chains to train on and to score", f)
		}
		if f.Fits != 2 { // two days, refitted every 24 h
			t.Errorf("fold %+v: %d fits, want 2", f, f.Fits)
		}
	}
	all := map[string]protocol.WFRow{}
	for _, row := range r.Rows {
		if row.Class == "all" {
			all[row.Policy] = row
		}
		if len(row.PerFold) != len(r.Folds) { // one ratio per reported period, however often the models were refitted
			t.Errorf("%s %s: %d per-period ratios for %d periods", row.Class, row.Policy, len(row.PerFold), len(r.Folds))
		}
	}
	for _, p := range append([]string{protocol.WFReactive, protocol.WFOracle, "xgb", "xgb-pin"}, protocol.WFBaselines...) {
		if all[p].N != scored {
			t.Errorf("%s: %d hand-offs, want every scored chain (%d)", p, all[p].N, scored)
		}
	}
	// The pick is the model-backed policy (xgb on the tables, or xgb-pin
	// replayed) with the lowest mean |gap|.
	if want := map[bool]string{true: "xgb", false: "xgb-pin"}[all["xgb"].MeanAbsGap <= all["xgb-pin"].MeanAbsGap]; r.Pick != want {
		t.Errorf("pick %q, want %s (mean |gap| xgb %.3f h, xgb-pin %.3f h)", r.Pick, want, all["xgb"].MeanAbsGap, all["xgb-pin"].MeanAbsGap)
	}
	// The oracle is each chain's best tick: no policy does better.
	if o := all[protocol.WFOracle].MeanAbsGap; o > all["xgb"].MeanAbsGap || o > all[protocol.WFReactive].MeanAbsGap {
		t.Errorf("oracle mean |gap| %.3f h above xgb %.3f or reactive %.3f", o, all["xgb"].MeanAbsGap, all[protocol.WFReactive].MeanAbsGap)
	}
	// From the cache, the same result.
	if again := run(); !reflect.DeepEqual(again.Rows, r.Rows) {
		for i := range r.Rows {
			if !reflect.DeepEqual(again.Rows[i], r.Rows[i]) {
				t.Errorf("a second run (tables from the cache) gave other rows: %+v, then %+v", r.Rows[i], again.Rows[i])
			}
		}
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--months", "yesterday"}, cmdutil.ExitUsage, `--months "yesterday"`},
		{[]string{"--months", "2022-11-08,2022-11-06"}, cmdutil.ExitUsage, "is not after"},
		{[]string{"--months", "2022-11-06", "--policies", "nope"}, cmdutil.ExitUsage, `"nope"`},
		{[]string{"--months", "2022-11-06", "--baselines", "xgb"}, cmdutil.ExitUsage, `"xgb" as a baseline`},
		{[]string{"--months", "2022-11-06", "--replayed", "lead-pin"}, cmdutil.ExitUsage, `"lead-pin" to replay`},
		{[]string{"--months", "2022-11-06", "--retrain", "5m"}, cmdutil.ExitUsage, "at least 1h"},
	} {
		_, stderr, code := runMirage(t, append([]string{"eval", "walk-forward", "--trace", fx.trace}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d (%s), want %d and %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}
