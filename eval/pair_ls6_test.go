package eval

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		t.Skip("set MIRAGE_ACCEPTANCE to a models directory to run the LS6 acceptance evaluation")
	}
	tr := filepath.Join(testenv.SharedTraces(t), "tacc-ls6-a100", "ls6-a100-until-2023-03-01.log.gz")
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
	policies := []string{"reactive", "dependency", "lead", "start-estimate", "average", "quantile", "oracle"}
	for _, n := range []string{"rf", "rf-golearn", "rf-xgb", "xgb", "dqn", "pg"} {
		if _, err := os.Stat(filepath.Join(dir, n, models.MetaFile)); err == nil {
			policies = append(policies, n)
		}
	}
	if p := os.Getenv("MIRAGE_ACCEPTANCE_POLICIES"); p != "" {
		policies = strings.Split(p, ",")
	}
	start := time.Now()
	samples, err := RunPairs(context.Background(), PairConfig{Scenario: sc, From: time.Date(2023, 2, 1, 0, 0, 0, 0, chi), Until: time.Date(2023, 2, 27, 0, 0, 0, 0, chi),
		Policies: policies, Cell: "ls6-feb", Factory: func(probe models.OracleProbe) provisioner.PolicyFactory {
			return models.PolicyFactory(dir, models.PolicyOptions{Probe: probe})
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples in %s", len(samples), time.Since(start).Round(time.Second))
	var b strings.Builder
	if err := WritePairTable(&b, PairRows(samples, scenario.DefaultGapCost)); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
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
}
