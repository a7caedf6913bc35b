package main

import (
	"cmp"
	"encoding/gob"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/nn"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/mirage-gpu/mirage/sim"
)

// chainDecisions reads a chain's decision log (mirage log --json).
func chainDecisions(t *testing.T, e *chainEnv, id string) []chainops.DecisionJSON {
	t.Helper()
	out, stderr, code := e.run(t, "log", id, "--json")
	var lg struct {
		Decisions []chainops.DecisionJSON `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(out), &lg); err != nil || code != 0 {
		t.Fatalf("log: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	return lg.Decisions
}

// TestSubmitLearnedPolicy: a trained model is a policy of submit and the
// daemon (submit --models, recorded with the chain), and the decision log
// names the model and its version (its training time from meta.json).
func TestSubmitLearnedPolicy(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t)
	meta, err := models.ReadMeta(filepath.Join(fx.dir, "xgb"))
	if err != nil {
		t.Fatal(err)
	}
	e := newChainEnv(t)
	script := e.script(t, "x.sbatch", "-t 55")
	id := e.submitChain(t, script, "--segments", "3", "--policy", "xgb", "--models", fx.dir, "--", "-p", "batch")
	// The daemon is given no --models: the chain decides with the
	// directory submit recorded.
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "20"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	label := "xgb@" + meta.Created.UTC().Format(time.RFC3339) + ": "
	consulted := 0
	for _, d := range chainDecisions(t, e, id) {
		if d.Action == "first" {
			continue
		}
		if d.Policy != "xgb" {
			t.Errorf("decision %+v: want policy xgb", d)
		}
		if strings.HasPrefix(d.Reason, label) {
			consulted++
		}
	}
	if consulted == 0 {
		t.Errorf("no decision names the model %q", label)
	}
	cj := e.statusJSON(t, id)
	if cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 3 {
		t.Errorf("chain %s with %d segments, want done with 3", cj.State, len(cj.SegmentList))
	}
}

// TestSubmitLearnedPolicyMissing: submit refuses a learned policy without a
// model (bad input, exit 3, as a missing model everywhere), naming the
// directory and the train command; a daemon that finds
// the model gone lets lead decide for the chain, and says so in each reason.
func TestSubmitLearnedPolicyMissing(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	empty := t.TempDir()
	script := e.script(t, "x.sbatch", "-t 55")
	_, stderr, code := e.run(t, "submit", script, "--policy", "xgb", "--models", empty)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, filepath.Join(empty, "xgb")) || !strings.Contains(stderr, "mirage train --model xgb --out "+empty) {
		t.Fatalf("submit --policy xgb without a model: exit %d: %s", code, stderr)
	}
	// The model is there at submit time, then it is gone (its directory
	// moved away) when the daemon runs: lead stands in.
	moved := filepath.Join(t.TempDir(), "models")
	if err := os.CopyFS(moved, os.DirFS(trainedFixture(t).dir)); err != nil {
		t.Fatal(err)
	}
	id := e.submitChain(t, script, "--segments", "2", "--policy", "rf", "--models", moved)
	if cj := e.statusJSON(t, id); cj.Models != moved {
		t.Errorf("chain records models %q, want %q", cj.Models, moved)
	}
	if err := os.Rename(moved, moved+".gone"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "14", "--models", empty); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	sawLead := false
	for _, d := range chainDecisions(t, e, id) {
		// The daemon's decisions on the successor (submit ran at chainT0;
		// the chain's end is not a policy's decision).
		if !d.Time.After(chainT0) || (d.Action != string(provisioner.Wait) && d.Action != string(provisioner.SubmitNow)) {
			continue
		}
		if d.Policy != provisioner.PolicyLead || !strings.HasPrefix(d.Reason, "rf unavailable (") || !strings.Contains(d.Reason, "), lead decides: ") {
			t.Errorf("decision %+v: want lead standing in for rf", d)
		}
		sawLead = true
	}
	if cj := e.statusJSON(t, id); !sawLead || cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 2 {
		t.Errorf("chain %s with %d segments (lead decided: %v), want done with 2", cj.State, len(cj.SegmentList), sawLead)
	}
}

// statusJSON reads one chain (mirage status ID --json).
func (e *chainEnv) statusJSON(t *testing.T, id string) chainops.ChainJSON {
	t.Helper()
	out, stderr, code := e.run(t, "status", id, "--json")
	var cj chainops.ChainJSON
	if err := json.Unmarshal([]byte(out), &cj); err != nil || code != 0 {
		t.Fatalf("status: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	return cj
}

// TestSubmitDefaultPolicy: without --policy, submit uses on a backend that
// can lift a pending job's node list (the simulator, as Slurm), the
// default learned policy's pinned form when --models holds its model (and
// records the directory for the daemon), pin when it holds none or the
// chain is a service; an explicit --policy always wins.
func TestSubmitDefaultPolicy(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t)
	e := newChainEnv(t)
	script := e.script(t, "d.sbatch", "-t 55")
	for _, c := range []struct {
		args               []string
		policy, modelsPath string
	}{
		{[]string{"--models", fx.dir}, models.DefaultPinned, fx.dir}, // no workload: the published symmetric cost
		{nil, provisioner.PolicyPin, ""},
		{[]string{"--workload", "service"}, provisioner.PolicyPin, ""}, // no model
		{[]string{"--workload", "training", "--models", fx.dir}, models.DefaultPinned, fx.dir},
		{[]string{"--workload", "service", "--models", fx.dir}, provisioner.PolicyPin, ""}, // a service: pin, model or not (no model to record)
		{[]string{"--cost-interruption", "120", "--models", fx.dir}, models.DefaultPinned, fx.dir},
	} {
		id := e.submitChain(t, append(append([]string{script, "--new", "--segments", "2"}, c.args...), "--", "-p", "batch")...)
		if cj := e.statusJSON(t, id); cj.Policy != c.policy || cj.Models != c.modelsPath {
			t.Errorf("submit %q: policy %q, models %q; want %s and %q", c.args, cj.Policy, cj.Models, c.policy, c.modelsPath)
		}
	}
	id := e.submitChain(t, script, "--new", "--segments", "2", "--policy", "reactive", "--models", fx.dir, "--", "-p", "batch")
	if cj := e.statusJSON(t, id); cj.Policy != "reactive" {
		t.Errorf("--policy reactive with models present: policy %q", cj.Policy)
	}
	id = e.submitChain(t, script, "--new", "--segments", "2", "--workload", "service", "--policy", "lead", "--", "-p", "batch")
	if cj := e.statusJSON(t, id); cj.Policy != provisioner.PolicyLead {
		t.Errorf("--workload service --policy lead: policy %q", cj.Policy)
	}
}

// noPin are the capabilities of a backend that cannot lift a node list
// (Kubernetes): the default is then the learned one, as
// models.DefaultPolicy finds it.
var noPin = k8s.Capabilities

// TestDefaultPolicyWithoutUnpin: on a backend that cannot unpin
// (Capabilities.Unpins) the default is the default learned policy when the models directory
// holds it, xgb when only xgb's model is there, lead when it holds neither;
// on one with it, their pinned forms, and pin (and pin for a service).
func TestDefaultPolicyWithoutUnpin(t *testing.T) {
	fx := trainedFixture(t)
	f := func(dir string) provisioner.PolicyFactory { return models.PolicyFactory(dir, models.PolicyOptions{}) }
	xgbOnly := t.TempDir()
	if err := os.CopyFS(filepath.Join(xgbOnly, "xgb"), os.DirFS(filepath.Join(fx.dir, "xgb"))); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{{fx.dir, models.DefaultLearned}, {xgbOnly, "xgb"}, {t.TempDir(), provisioner.PolicyLead}} {
		if got, _ := models.DefaultPolicyFor(noPin, f(c.dir), ""); got != c.want {
			t.Errorf("models in %s: default %q, want %q", c.dir, got, c.want)
		}
	}
	// On the simulator (it unpins): the same models' pinned forms, pin
	// without.
	for _, c := range []struct{ dir, want string }{{fx.dir, "xgb-online-pin"}, {xgbOnly, "xgb-pin"}, {t.TempDir(), provisioner.PolicyPin}} {
		if got, _ := models.DefaultPolicyFor(sim.Capabilities, f(c.dir), ""); got != c.want {
			t.Errorf("on the simulator, models in %s: default %q, want %q", c.dir, got, c.want)
		}
	}
	// A service: pin on the simulator whatever is trained; where nothing
	// unpins, as any other chain.
	if got, _ := models.DefaultPolicyFor(sim.Capabilities, f(fx.dir), provisioner.WorkloadService); got != provisioner.PolicyPin {
		t.Errorf("service on the simulator with models: default %q, want pin", got)
	}
	if got, _ := models.DefaultPolicyFor(noPin, f(fx.dir), provisioner.WorkloadService); got != models.DefaultLearned {
		t.Errorf("service without the Unpinner, with models: default %q, want %s", got, models.DefaultLearned)
	}
}

// TestSubmitWorkload: submit records the chain's workload (training by
// default when the script runs mirage handoff; --workload; or explicit
// weights), status shows it, bad values are usage errors, and the daemon's
// learned policy decides with the workload's thresholds (its reasons say
// so).
func TestSubmitWorkload(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	plain := e.script(t, "plain.sbatch", "-t 55")
	handoff := filepath.Join(e.dir, "handoff.sbatch")
	if err := os.WriteFile(handoff, []byte("#!/bin/bash\n#SBATCH -t 55\n\"$MIRAGE_BIN\" handoff --signal USR1\nsrun python train.py --resume\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script   string
		args     []string
		workload string
		cost     *provisioner.GapCost
	}{
		{plain, nil, "", nil},
		{handoff, nil, provisioner.WorkloadTraining, nil},
		{plain, []string{"--workload", "service"}, provisioner.WorkloadService, nil},
		{handoff, []string{"--cost-interruption", "100", "--cost-overlap", "5"}, "", &provisioner.GapCost{InterruptionPerHour: 100, OverlapPerHour: 5, HandOff: true}}, // the script hands off
		{plain, []string{"--overlap-budget", "2h"}, "", &provisioner.GapCost{InterruptionPerHour: 60, OverlapPerHour: 60, OverlapBudget: 2 * time.Hour}},               // the others keep the published weights
	} {
		id := e.submitChain(t, append(append([]string{c.script, "--new", "--policy", "lead"}, c.args...), "--segments", "2")...)
		cj := e.statusJSON(t, id)
		if cj.Workload != c.workload || (cj.Cost == nil) != (c.cost == nil) || c.cost != nil && *cj.Cost != *c.cost {
			t.Errorf("submit %s %q: workload %q cost %v; want %q %v", filepath.Base(c.script), c.args, cj.Workload, cj.Cost, c.workload, c.cost)
		}
	}
	for _, bad := range [][]string{{"--workload", "batch"}, {"--workload", "training", "--cost-overlap", "1"}, {"--cost-interruption", "-1"}, {"--cost-overlap", "NaN"}, {"--cost-overlap", "+Inf"}} {
		if _, stderr, code := e.run(t, append([]string{"submit", plain, "--new"}, bad...)...); code != cmdutil.ExitUsage {
			t.Errorf("submit %q: exit %d (%s), want %d", bad, code, stderr, cmdutil.ExitUsage)
		}
	}
	// The daemon decides with the training workload's thresholds.
	needXGBoost(t)
	fx := trainedFixture(t)
	id := e.submitChain(t, handoff, "--new", "--segments", "2", "--policy", "xgb", "--models", fx.dir)
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "14"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	n := 0
	for _, d := range chainDecisions(t, e, id) {
		if strings.HasSuffix(d.Reason, "still pending: a successor would only queue behind it: wait") {
			continue // the step's own rule, not the policy's: the waits while segment 0 queued (an entry of their own since #51)
		}
		if d.Policy == "xgb" && (d.Action == string(provisioner.Wait) || d.Action == string(provisioner.SubmitNow)) {
			n++
			if !strings.HasSuffix(d.Reason, "(the training workload's thresholds)") {
				t.Errorf("decision %+v: want the training workload's thresholds", d)
			}
		}
	}
	if n == 0 {
		t.Error("xgb made no decision")
	}
	// With a model fitted for the workload beside it (mirage train
	// --workload training writes DIR/xgb@training), the chain decides with
	// that model, by the hand-off rule: the predicted gap against a
	// threshold of 0, or the QBETS floor.
	both := filepath.Join(t.TempDir(), "models")
	if err := os.CopyFS(filepath.Join(both, "xgb"), os.DirFS(filepath.Join(fx.dir, "xgb"))); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMirage(t, "train", "--trace", fx.trace, "--model", "xgb", "--workload", "training", "--out", both,
		"--from", "2022-11-04", "--train-until", "2022-11-08", "--until", "2022-11-10", "--nodes", "1,4", "--every", "12h", "--cycle", "30m",
		"--limit", "12h", "--seed", "3", "--cache", filepath.Join(filepath.Dir(fx.dir), "cache")); code != 0 {
		t.Fatalf("train --workload training: exit %d: %s", code, stderr)
	}
	id = e.submitChain(t, handoff, "--new", "--segments", "2", "--policy", "xgb", "--models", both)
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "14"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	n = 0
	for _, d := range chainDecisions(t, e, id) {
		if strings.HasPrefix(d.Reason, "predecessor job ") && strings.Contains(d.Reason, " still pending: ") {
			continue // the engine's, before the policy is asked
		}
		if d.Policy == "xgb" && (d.Action == string(provisioner.Wait) || d.Action == string(provisioner.SubmitNow)) {
			n++
			t.Logf("%s: %s", d.Action, d.Reason)
			if !strings.HasSuffix(d.Reason, "(the training workload's model)") ||
				!strings.Contains(d.Reason, ": floor: quantile: ") && !strings.Contains(d.Reason, " 0s: ") {
				t.Errorf("decision %+v: want the training workload's model and its hand-off rule", d)
			}
		}
	}
	if n == 0 {
		t.Error("xgb@training made no decision")
	}
}

// TestDaemonAdaptsXGBOnline: the daemon gives xgb-online the hand-offs of
// the chains in its state database, ended ones included. xgb-online's rule
// is set to move a threshold 1 h per hand-off beyond a dead band of 0 (guard
// off): after chain A has handed off with gap g, every model decision of a
// later chain B of the same size says its threshold moved by −1 h (g > 0:
// submit earlier), +1 h (g < 0) or not at all (g = 0).
func TestDaemonAdaptsXGBOnline(t *testing.T) {
	t.Parallel()
	fx := trainedFixture(t)
	dir := t.TempDir()
	src := filepath.Join(fx.dir, models.PolicyXGBOnline)
	dst := filepath.Join(dir, models.PolicyXGBOnline)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dst, models.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	meta["decision"].(map[string]any)["online"] = map[string]any{"guard_level": 1, "step_s": 3600, "dead_band_s": 0, "since": "2000-01-01T00:00:00Z"}
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, models.MetaFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newChainEnv(t)
	script := e.script(t, "o.sbatch", "-t 55")
	a := e.submitChain(t, script, "--segments", "2", "--policy", models.PolicyXGBOnline, "--models", dir, "--", "-p", "batch")
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "14"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	ca := e.statusJSON(t, a)
	if ca.State != string(provisioner.ChainDone) || len(ca.SegmentList) != 2 || ca.SegmentList[1].GapSec == nil {
		t.Fatalf("chain A: %s with %d segments, want done with 2 and a gap", ca.State, len(ca.SegmentList))
	}
	g := *ca.SegmentList[1].GapSec
	want := ""
	switch {
	case g > 0:
		want = "(threshold moved -1h0m0s by the realised hand-offs)"
	case g < 0:
		want = "(threshold moved +1h0m0s by the realised hand-offs)"
	}
	bID := e.submitChain(t, script, "--new", "--segments", "2", "--policy", models.PolicyXGBOnline, "--models", dir, "--", "-p", "batch")
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "14"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	n := 0
	for _, d := range chainDecisions(t, e, bID) {
		if !strings.HasPrefix(d.Reason, models.PolicyXGBOnline+"@") {
			continue
		}
		n++
		if moved := strings.Contains(d.Reason, "threshold moved"); want == "" && moved || want != "" && !strings.HasSuffix(d.Reason, want) {
			t.Errorf("chain B decision %q after chain A's gap of %g s: want %q", d.Reason, g, cmp.Or(want, "no move"))
		}
	}
	if n == 0 {
		t.Fatal("chain B: no decision of the model")
	}
	t.Logf("chain A's gap %g s; chain B: %d model decisions", g, n)
}

// saveDQN saves an untrained dqn model (a 4-unit network) created at
// created in dir: a learned policy that loads without libxgboost.
func saveDQN(t *testing.T, dir string, created time.Time) {
	t.Helper()
	net, err := nn.NewMLP(nn.MLPConfig{Inputs: features.NumFeatures(), Hidden: []int{4}, Outputs: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	meta := models.Meta{Kind: models.KindDQN, Task: models.Preference, Schema: features.Schema(), Created: created}
	m, err := nn.NewPolicyNetModel(net, nil, meta)
	if err != nil {
		t.Fatal(err)
	}
	m.SetMeta(meta)
	if err := models.Save(dir, m); err != nil {
		t.Fatal(err)
	}
}

// TestDaemonLoadsModelsOnce: the engine resolves the chains' policies
// before each pure step and the registry keeps what it read, so a daemon
// of 100 cycles with two chains deciding by one model (dqn and its pinned
// form) reads that model once; a model retrained meanwhile (a new
// meta.json) is read again, once, and decides from then on.
func TestDaemonLoadsModelsOnce(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	dir := t.TempDir()
	v1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	saveDQN(t, filepath.Join(dir, "dqn"), v1)
	var mu sync.Mutex
	loads := map[string]int{}
	e.f.Policies = func(d string) provisioner.PolicyFactory {
		return models.PolicyFactory(d, models.PolicyOptions{Load: func(p string, want features.SchemaID) (models.Model, error) {
			mu.Lock()
			loads[p]++
			mu.Unlock()
			return models.Load(p, want)
		}})
	}
	script := e.script(t, "x.sbatch", "-t 55")
	a := e.submitChain(t, script, "--segments", "40", "--policy", "dqn", "--models", dir, "--", "-p", "batch")
	b := e.submitChain(t, script, "--segments", "40", "--policy", "dqn-pin", "--models", dir, "--", "-p", "batch")
	mu.Lock()
	clear(loads) // each submit is a process of its own and reads the model once
	mu.Unlock()
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "100"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	model := filepath.Join(dir, "dqn")
	if len(loads) != 1 || loads[model] != 1 {
		t.Errorf("100 cycles read %v, want %s once", loads, model)
	}
	// Both chains were decided by the model at many cycles: not a test
	// that passes because nothing asked for a policy.
	label := func(v time.Time) string { return "dqn@" + v.Format(time.RFC3339) + ": " }
	consulted := func(id string, v time.Time) int {
		n := 0
		for _, d := range chainDecisions(t, e, id) {
			if strings.Contains(d.Reason, label(v)) {
				n++
			}
		}
		return n
	}
	for _, id := range []string{a, b} {
		if n := consulted(id, v1); n < 10 {
			t.Errorf("chain %s: %d decisions by %s, want at least 10 over 100 cycles", id, n, label(v1))
		}
	}
	// Retrained: the next daemon of 20 cycles reads it once more.
	v2 := v1.Add(24 * time.Hour)
	saveDQN(t, model, v2)
	clear(loads)
	if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "20"); code != 0 {
		t.Fatalf("daemon: exit %d: %s", code, stderr)
	}
	if len(loads) != 1 || loads[model] != 1 {
		t.Errorf("20 more cycles after retraining read %v, want %s once", loads, model)
	}
	if n := consulted(a, v2); n == 0 {
		t.Errorf("chain %s: no decision by the retrained %s", a, label(v2))
	}
}

// plantedNet is the gob layout of a dqn model file (nn's policyNetFile:
// gob matches fields by name), to plant a network the trainer never writes.
type plantedNet struct {
	Net struct {
		Config  nn.MLPConfig
		Shapes  [][2]int
		Weights [][]float64
	}
}

// TestDaemonPlantedModels (#50): a chain's dqn model replaced by (a) a
// network whose shapes passed the loader's old checks but disagree (a bias
// of 8 values after a 4-unit layer, then an 8-row matrix: MLP.Forward
// indexed past its 4-value buffer, and every daemon cycle exited 2 with a
// panic), or (b) a meta.json that is a link to /dev/zero (read without
// bound before: 1.2 GB), stops neither the daemon (exit 0) nor the chain:
// lead decides for it, each reason saying why the model is unavailable.
func TestDaemonPlantedModels(t *testing.T) {
	t.Parallel()
	n := features.NumFeatures()
	for name, plant := range map[string]func(t *testing.T, model string){
		"inconsistent shapes": func(t *testing.T, model string) {
			var p plantedNet
			p.Net.Config = nn.MLPConfig{Inputs: n, Hidden: []int{4}, Outputs: 2}
			p.Net.Shapes = [][2]int{{n, 4}, {1, 8}, {8, 2}, {1, 2}}
			for _, l := range []int{4 * n, 8, 16, 2} {
				p.Net.Weights = append(p.Net.Weights, make([]float64, l))
			}
			f, err := os.Create(filepath.Join(model, nn.PolicyNetFile))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := gob.NewEncoder(f).Encode(p); err != nil {
				t.Fatal(err)
			}
		},
		"meta.json a link to /dev/zero": func(t *testing.T, model string) {
			meta := filepath.Join(model, models.MetaFile)
			if err := os.Remove(meta); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/zero", meta); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newChainEnv(t)
			dir := t.TempDir()
			model := filepath.Join(dir, "dqn")
			saveDQN(t, model, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
			script := e.script(t, "x.sbatch", "-t 55")
			id := e.submitChain(t, script, "--segments", "2", "--policy", "dqn", "--models", dir, "--", "-p", "batch")
			plant(t, model)
			if _, stderr, code := e.run(t, "daemon", "--interval", "10m", "--max-cycles", "14"); code != 0 {
				t.Fatalf("daemon with a planted model: exit %d: %s", code, stderr)
			}
			decided := 0
			for _, d := range chainDecisions(t, e, id) {
				if !d.Time.After(chainT0) || (d.Action != string(provisioner.Wait) && d.Action != string(provisioner.SubmitNow)) {
					continue
				}
				if d.Policy != provisioner.PolicyLead || !strings.HasPrefix(d.Reason, "dqn unavailable (") || !strings.Contains(d.Reason, "), lead decides: ") {
					t.Errorf("decision %+v: want lead standing in for dqn", d)
				}
				decided++
			}
			if cj := e.statusJSON(t, id); decided == 0 || cj.State != string(provisioner.ChainDone) || len(cj.SegmentList) != 2 {
				t.Errorf("chain %s with %d segments after %d decisions by lead, want done with 2", cj.State, len(cj.SegmentList), decided)
			}
		})
	}
}
