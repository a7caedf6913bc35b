package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/acceptance"
	"github.com/mirage-gpu/mirage/internal/testenv"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/scenario"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/traces"

	// The learned policies under test load their model kinds from these.
	_ "github.com/mirage-gpu/mirage/models/learners"
)

// TestAcceptanceLS6 is the acceptance run of issue 6 (not a unit test: it
// runs only when MIRAGE_ACCEPTANCE names a models directory trained with
// `mirage train ... --train-until 2023-02-01`): the pair protocol on the
// shared LS6 file, chains injected every 4 h from 2023-02-01 to
// 2023-02-27 (US Central; the predecessors then end by 1 March, before the
// trace's arrivals stop), sizes 1 and 8 nodes, every baseline and learned
// policy, through the provisioner's engine. It prints the README table and
// writes the samples to MIRAGE_ACCEPTANCE_OUT (JSON) when set.
//
//	MIRAGE_ACCEPTANCE=DIR MIRAGE_ACCEPTANCE_OUT=samples.json \
//	  go test -tags "libsqlite3 xgboost" -run TestAcceptanceLS6 -v -timeout 2h ./eval/
func TestAcceptanceLS6(t *testing.T) {
	dir := os.Getenv("MIRAGE_ACCEPTANCE")
	if dir == "" {
		t.Skip("set MIRAGE_ACCEPTANCE to a models directory to run the LS6 acceptance evaluation") // opt-in, never in CI: scores models trained elsewhere
	}
	tr := testenv.SharedTrace(t, testenv.LS6)
	r, err := traces.Open(tr, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []traces.Job
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	r.Close()
	sc, err := scenario.NewScenario(filepath.Base(tr), jobs, sim.LS6())
	if err != nil {
		t.Fatal(err)
	}
	chi, _ := time.LoadLocation("America/Chicago")
	policies := []string{"reactive", "dependency", "lead", "start-estimate", "average", "quantile", provisioner.PolicyPin, "oracle"}
	for _, n := range []string{"rf", "rf-golearn", "rf-xgb", "xgb", "dqn", "pg", models.DefaultLearned} {
		if _, err := os.Stat(filepath.Join(dir, n, models.MetaFile)); err == nil {
			policies = append(policies, n)
			if n == models.DefaultLearned {
				policies = append(policies, models.DefaultPinned)
			}
		}
	}
	if p := os.Getenv("MIRAGE_ACCEPTANCE_POLICIES"); p != "" {
		policies = strings.Split(p, ",")
	}
	start := time.Now()
	samples, err := protocol.RunPairs(context.Background(), protocol.PairConfig{Scenario: sc, From: time.Date(2023, 2, 1, 0, 0, 0, 0, chi), Until: time.Date(2023, 2, 27, 0, 0, 0, 0, chi),
		Policies: policies, Cell: "ls6-feb", Factory: func(probe models.OracleProbe) provisioner.PolicyFactory {
			return models.PolicyFactory(dir, models.PolicyOptions{Probe: probe})
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples in %s", len(samples), time.Since(start).Round(time.Second))
	rows := protocol.PairRows(samples, scenario.DefaultGapCost)
	var b bytes.Buffer
	if err := protocol.WritePairTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	// An invariant of the table, independent of any policy: the oracle is
	// the best tick of each chain to submit at, so no policy that only
	// chooses that tick has a mean |gap| below it (pin and the pinned forms
	// also choose where the successor starts).
	pair := func(p, group string) *protocol.PairRow {
		for i := range rows {
			if rows[i].Policy == p && rows[i].Group == group {
				return &rows[i]
			}
		}
		return nil
	}
	for _, r := range rows {
		if o := pair(models.PolicyOracle, r.Group); o != nil && r.Policy != provisioner.PolicyPin && !strings.HasSuffix(r.Policy, models.PinSuffix) &&
			r.Summary.MeanAbsGapH < o.Summary.MeanAbsGapH-1e-9 {
			t.Errorf("%s %s: mean |gap| %.3f h below the oracle's %.3f h", r.Group, r.Policy, r.Summary.MeanAbsGapH, o.Summary.MeanAbsGapH)
		}
	}
	// Issue 16's lines for the defaults (chosen before February, nothing
	// picked here): pin, and once xgb-online is trained xgb-online-pin and
	// xgb-online. Each "no" fails the test once the page is written.
	acc := acceptance.New(acceptanceResults)
	class := func(p string) func(string) (issue16Class, bool) {
		return func(c string) (issue16Class, bool) {
			r, react, o := pair(p, c), pair(metrics.Reference, c), pair(models.PolicyOracle, c)
			if r == nil || react == nil || o == nil || r.Summary.N == 0 {
				return issue16Class{}, false
			}
			return issue16Class{n: r.Summary.N, vsReactive: r.Summary.MeanAbsGapH / react.Summary.MeanAbsGapH,
				vsOracle: r.Summary.MeanAbsGapH / o.Summary.MeanAbsGapH, overlap: r.Summary.MeanOverlapH}, true
		}
	}
	b.WriteString("\n## Issue 16's acceptance for the defaults, measured\n\n" +
		"× reactive = mean |gap| / reactive's on the same chains (the pair protocol runs every policy on each).\n")
	for _, p := range []string{provisioner.PolicyPin, models.DefaultPinned, models.DefaultLearned} {
		fmt.Fprintf(&b, "\n### %s\n\n", p)
		if !slices.Contains(policies, p) {
			line := p + ": not scored: MIRAGE_ACCEPTANCE holds no " + models.DefaultLearned + " model (train it with --model " + models.DefaultLearned + ")"
			fmt.Fprintf(&b, "- %s — %s\n", line, acc.Verdict(false, line))
			continue
		}
		writeIssue16Lines(&b, acc, p, class(p))
	}
	t.Log("\n" + b.String())
	if os.Getenv("MIRAGE_UPDATE_RESULTS") == "1" {
		writeAcceptanceResults(t, b.String(), len(samples))
	}
	if out := os.Getenv("MIRAGE_ACCEPTANCE_OUT"); out != "" {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(f)
		enc.SetIndent("", " ")
		if err := enc.Encode(samples); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	acc.Check(t) // after the page: it records every line, met or not
}

// acceptanceResults is the results page TestAcceptanceLS6 writes with
// MIRAGE_UPDATE_RESULTS=1 (relative to this package's directory).
const acceptanceResults = "../docs/results/ls6-acceptance.md"

// writeAcceptanceResults writes docs/results/ls6-acceptance.md from the
// table the test printed.
func writeAcceptanceResults(t *testing.T, table string, samples int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# LS6 acceptance\n\n")
	b.WriteString("<!-- Generated by TestAcceptanceLS6 (eval/pair_ls6_test.go); do not edit. -->\n")
	b.WriteString("Regenerate (with the shared LS6 trace):\n\n```sh\n")
	b.WriteString("mirage train --trace ../shared/traces/tacc-ls6-a100/ls6-a100-until-2023-03-01.log.gz \\\n")
	b.WriteString("  --model xgb,xgb-online,rf,rf-xgb,dqn,pg --out out/acceptance-models --train-until 2023-02-01 --until 2023-02-27\n")
	b.WriteString("MIRAGE_UPDATE_RESULTS=1 MIRAGE_ACCEPTANCE=$PWD/out/acceptance-models go test -tags \"libsqlite3 xgboost\" -run TestAcceptanceLS6 -v -timeout 2h ./eval/\n")
	// The models go under the ignored out/, not models/ (the models package's
	// sources, with sub-packages named like the learned policies); go test
	// runs in eval/, so MIRAGE_ACCEPTANCE must be absolute.
	b.WriteString("```\n\n")
	b.WriteString("The pair protocol on the shared LS6 file: chains injected every 4 h from 1 to 27 February\n")
	b.WriteString("2023 (US Central), 1 and 8 nodes, every baseline and learned policy deciding through the\n")
	b.WriteString("provisioner's engine in its own fork. Load class by the reactive gap (≤ 2 h low, 2–12 h\n")
	fmt.Fprintf(&b, "medium, > 12 h heavy). Hours; %d samples.\n\n", samples)
	b.WriteString(table)
	if err := os.WriteFile(acceptanceResults, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", acceptanceResults)
}
