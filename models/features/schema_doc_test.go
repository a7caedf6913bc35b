package features_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/models/features"
)

// featureSchemaDoc is the generated reference page, relative to this package.
const featureSchemaDoc = "../../docs/reference/feature-schema.md"

// updateDoc reports the package's -update flag (rewrite generated files). It
// is looked up by name so this test does not depend on which file defines it.
var updateDoc = func() func() bool {
	if f := flag.Lookup("update"); f != nil {
		return func() bool { return f.Value.String() == "true" }
	}
	b := flag.Bool("update", false, "rewrite generated files")
	return func() bool { return *b }
}()

// fieldDocs describes every feature field by its name; percentile families
// (…_pN) are described once by their stem.
var fieldDocs = map[string]string{
	"pending_count":           "pending jobs",
	"pending_nodes":           "nodes requested by pending jobs (sum)",
	"pending_gpus":            "GPUs requested by pending jobs (sum)",
	"pending_limit_h":         "time limit of pending jobs, hours",
	"pending_wait_h":          "time pending jobs have waited so far, hours",
	"running_count":           "running jobs",
	"running_nodes":           "nodes of running jobs (sum)",
	"running_gpus":            "GPUs of running jobs (sum)",
	"running_limit_h":         "time limit of running jobs, hours",
	"running_wait_h":          "wait of running jobs (start − submit), hours",
	"running_run_h":           "time run so far by running jobs, hours",
	"running_left_h":          "time left of running jobs (limit − run, ≥ 0), hours",
	"nodes_up":                "schedulable nodes",
	"gpus_up":                 "GPUs on schedulable nodes",
	"gpus_free":               "free GPUs",
	"nodes_idle":              "idle nodes (nothing allocated)",
	"gpu_demand_ratio":        "pending GPUs / schedulable GPUs",
	"pred_present":            "1 when the chain has a predecessor (its other fields are 0 otherwise)",
	"pred_limit_h":            "predecessor's time limit, hours",
	"pred_nodes":              "predecessor's nodes",
	"pred_gpus":               "predecessor's GPUs",
	"pred_wait_h":             "predecessor's queue wait, hours",
	"pred_elapsed_h":          "predecessor's time run so far, hours",
	"pred_left_h":             "predecessor's time left, hours",
	"pred_running":            "1 when the predecessor runs",
	"succ_limit_h":            "successor's time limit (the chain's when the request has none), hours",
	"succ_nodes":              "successor's nodes",
	"succ_gpus":               "successor's GPUs",
	"acct_gpu_share":          "chain account's share of running GPUs",
	"acct_job_share":          "chain account's share of pending and running jobs",
	"acct_standing":           "fair-share standing: GPU share − job share",
	"acct_pending":            "chain account's pending jobs",
	"partition_hash":          "one-hot of FNV-1a(partition) mod 4",
	"partition_pending_share": "share of pending jobs in the successor's partition",
	"hist_wait_mean_h":        "mean wait of the last 100 starts in the past 24 h, hours",
	"hist_wait_p50_h":         "median wait of the same starts, hours",
	"hist_wait_p90_h":         "90th percentile wait of the same starts, hours",
	"hist_starts_24h":         "jobs started in the past 24 h",
	"plan_wait_first_h":       "successor's planned wait (every job runs to its limit) ahead of the pending queue, hours",
	"plan_wait_last_h":        "the same plan behind the whole pending queue (conservative backfill), hours",
	"plan_gap_first_h":        "plan_wait_first_h − predecessor's time left, hours",
	"plan_gap_last_h":         "plan_wait_last_h − predecessor's time left, hours",
	"plan_wait_mid_h":         "planned wait behind the upper half of the pending queue, hours",
	"plan_wait_own_h":         "planned wait behind the pending jobs its estimated priority puts ahead of it, hours",
	"hist_runtime_frac":       "median share of their limit that jobs ended in the past 24 h ran for (0 when fewer than 10)",
	"plan_exp_first_h":        "plan_wait_first_h with every job running for that share of its limit, hours",
	"plan_exp_mid_h":          "plan_wait_mid_h with expected runtimes, hours",
	"plan_exp_own_h":          "plan_wait_own_h with expected runtimes, hours",
	"plan_exp_last_h":         "plan_wait_last_h with expected runtimes, hours",
	"est_pending_share":       "share of pending jobs with a scheduler start estimate (squeue --start)",
	"est_shape_latest_h":      "latest estimated start among pending jobs of the successor's node count, hours from now",
	"est_latest_h":            "latest estimated start among all pending jobs, hours from now",
}

var (
	percentileField = regexp.MustCompile(`^(.*)_p(0|25|50|75|100)$`)
	hashField       = regexp.MustCompile(`^(partition_hash)_\d+$`)
)

// fieldDoc describes one field, or returns "".
func fieldDoc(name string) string {
	if d, ok := fieldDocs[name]; ok {
		return d
	}
	if m := percentileField.FindStringSubmatch(name); m != nil && fieldDocs[m[1]] != "" {
		return fieldDocs[m[1]] + ": " + m[2] + "th percentile"
	}
	if m := hashField.FindStringSubmatch(name); m != nil {
		return fieldDocs[m[1]]
	}
	return ""
}

// TestFeatureSchemaDoc keeps docs/reference/feature-schema.md equal to the
// schemas this build computes; -update rewrites it (make docs does).
func TestFeatureSchemaDoc(t *testing.T) {
	chain, wait := features.Schema(), features.WaitSchema()
	var b strings.Builder
	b.WriteString("# Feature schemas\n\n")
	b.WriteString("<!-- Generated by TestFeatureSchemaDoc (models/features/schema_doc_test.go) from features.Schema() and\n")
	b.WriteString("features.WaitSchema(); do not edit. Regenerate with make docs. -->\n\n")
	fmt.Fprintf(&b, "A learned model records the schema it was trained on (name, version, field names) in its\n")
	fmt.Fprintf(&b, "`meta.json` and refuses features of another schema or version, naming both. This build computes:\n\n")
	fmt.Fprintf(&b, "- `%s` v%d, %d fields: the chain policies (rf, rf-xgb, xgb, dqn, pg);\n", chain.Name, chain.Version, len(chain.Fields))
	fmt.Fprintf(&b, "- `%s` v%d, %d fields: the wait predictor (`mirage predict-wait`).\n\n", wait.Name, wait.Version, len(wait.Fields))
	b.WriteString("Every field comes from one cluster snapshot plus 24 hours of history, computed identically\n")
	b.WriteString("from Slurm, the simulator and Kubernetes (`provisioner.Observe`). Durations are in hours.\n")
	b.WriteString("How each is computed: the comment on `features.Features` (models/features/features.go).\n\n")
	fmt.Fprintf(&b, "| field | %s index | %s index | meaning |\n|---|---|---|---|\n", chain.Name, wait.Name)
	for wi, name := range wait.Fields {
		d := fieldDoc(name)
		if d == "" {
			t.Errorf("feature %q has no description: add it to fieldDocs in models/schema_doc_test.go", name)
		}
		ci := "–"
		if i := slices.Index(chain.Fields, name); i >= 0 {
			ci = fmt.Sprint(i)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %s |\n", name, ci, wi, d)
	}
	for _, name := range chain.Fields {
		if !slices.Contains(wait.Fields, name) {
			t.Errorf("chain feature %q is not in the wait schema: the page's table assumes it is", name)
		}
	}
	page := []byte(b.String())
	path := filepath.FromSlash(featureSchemaDoc)
	if updateDoc() {
		if err := os.WriteFile(path, page, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil || string(old) != string(page) {
		t.Errorf("%s is out of date (or missing): run make docs", featureSchemaDoc)
	}
}
