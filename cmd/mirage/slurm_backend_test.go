package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
)

// TestNewSlurmBackend: the Slurm backend is built from the flags (nothing
// runs), its bad inputs are refused with the exit code and a message that
// names the culprit, and --rules are read once, for the engine (the
// adapter learns the teams from them).
func TestNewSlurmBackend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "teams.yaml")
	if err := os.WriteFile(rules, []byte("teams:\n  - name: teama\n    gpus: 8\nborrowing:\n  enabled: true\n  qos: preemptible\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := backendOptions{kind: "slurm", slurm: slurm.Options{SlurmConf: conf, Bin: dir, Timeout: 7 * time.Second}}
	cl, err := newBackend(&base, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := cl.(*slurm.Client)
	if !ok {
		t.Fatalf("backend %T, want *slurm.Client", cl)
	}
	cfg := sc.Config()
	if cfg.SlurmConf != conf || cfg.Timeout != 7*time.Second || !strings.HasPrefix(cfg.Path, dir+string(os.PathListSeparator)) || cfg.TZ != "UTC" {
		t.Errorf("config %+v", cfg)
	}
	if r, ok := cfg.Runner.(*slurm.ExecRunner); !ok || !r.DieWithParent || r.SlurmConf != conf || r.Path != cfg.Path {
		t.Errorf("runner %+v: want the same conf and PATH, killed with mirage", cfg.Runner)
	}
	if r, err := base.loadRules(); r != nil || err != nil {
		t.Errorf("rules %v %v without --rules", r, err)
	}
	if _, ok := cl.(provisioner.HistorySource); !ok {
		t.Error("the Slurm backend reads no history")
	}

	withRules := base
	withRules.rules = rules
	cl, err = newBackend(&withRules, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := withRules.loadRules()
	if r == nil || err != nil {
		t.Fatalf("--rules: the engine gets no rules (%v)", err)
	}
	if again, _ := withRules.loadRules(); again != r {
		t.Error("--rules read twice")
	}
	if got := cl.(*slurm.Client).Config().Accounts; strings.Join(got, ",") != "teama" {
		t.Errorf("accounts %v: want the rules' teams", got)
	}
	// team teama, 8 GPUs of quota, nothing running: 12 GPUs would be over
	// quota; the 16 idle GPUs fit it, so it is borrowed with the rules' QOS.
	snap := &provisioner.Snapshot{Caps: slurm.Capabilities, Nodes: []provisioner.Node{{Name: "n1", State: provisioner.NodeUp, CPUs: 64, GPUs: 16}}}
	req := provisioner.SubmitRequest{Account: "teama", GPUs: 12, Nodes: 1}
	adm, err := r.Admit(time.Unix(0, 0), snap, &req)
	if err != nil || !adm.Allow || !adm.Borrowed || req.QOS != "preemptible" {
		t.Errorf("admission %+v, QOS %q, err %v; want borrowed as preemptible", adm, req.QOS, err)
	}

	env := func(k string) string { return map[string]string{"SLURM_CONF": conf}[k] }
	fromEnv := base
	fromEnv.slurm.SlurmConf = ""
	if cl, err := newBackend(&fromEnv, env); err != nil || cl.(*slurm.Client).Config().SlurmConf != conf {
		t.Errorf("SLURM_CONF from the environment: %v", err)
	}

	for _, c := range []struct {
		name string
		edit func(o *backendOptions)
		code int
		msg  string
	}{
		{"missing slurm.conf", func(o *backendOptions) { o.slurm.SlurmConf = filepath.Join(dir, "nope.conf") }, cmdutil.ExitBadInput, "nope.conf"},
		{"slurm-bin not a directory", func(o *backendOptions) { o.slurm.Bin = conf }, cmdutil.ExitBadInput, "not a directory"},
		{"zero timeout", func(o *backendOptions) { o.slurm.Timeout = 0 }, cmdutil.ExitUsage, "--slurm-timeout"},
		{"missing rules", func(o *backendOptions) { o.rules = filepath.Join(dir, "none.yaml") }, cmdutil.ExitBadInput, "none.yaml"},
		{"unknown backend", func(o *backendOptions) { o.kind = "pbs" }, cmdutil.ExitUsage, `--backend "pbs"`},
	} {
		o := base
		c.edit(&o)
		_, err := newBackend(&o, noEnv)
		var ee *cmdutil.ExitError
		if !errors.As(err, &ee) || ee.Code != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want exit %d mentioning %q", c.name, err, c.code, c.msg)
		}
	}
}

// noEnv is an empty environment.
func noEnv(string) string { return "" }

// TestCancelFindsUnrecordedJob: a chain whose segment is an intent
// (SUBMITTING, no job id: mirage died between sbatch and the commit) is
// cancelled with the live job that carries its tag.
func TestCancelFindsUnrecordedJob(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t)
	id := e.submitChain(t, e.script(t, "x.sbatch", "-t 55"), "--segments", "2")
	// Forget the job id of segment 0, as a crash between sbatch and the commit would.
	st, err := (&stateOptions{state.Location{Dir: e.state}}).open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	segs, _ := st.Segments(context.Background(), id)
	job := segs[0].JobID
	segs[0].JobID, segs[0].State = "", provisioner.StateSubmitting
	if err := st.PutSegment(context.Background(), &segs[0]); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out, stderr, code := e.run(t, "cancel", id)
	if code != 0 || !strings.Contains(out, "cancelled job "+job+" (segment 0)") {
		t.Fatalf("cancel: exit %d: %s%s", code, out, stderr)
	}
	snap, _ := e.s.Snapshot(context.Background())
	if j := snap.Job(job); j != nil && !j.State.Finished() {
		t.Errorf("job %s still %s after cancel", job, j.State)
	}
	out, _, _ = e.run(t, "status", id)
	if !strings.Contains(out, job+"  CANCELLED") {
		t.Errorf("status after cancel:\n%s", out)
	}
}

// newBackend is the factory's backend: openBackend with the exit codes.
func newBackend(o *backendOptions, getenv func(string) string) (provisioner.Cluster, error) {
	cl, err := openBackend(o, getenv)
	return cl, stateErr(err)
}
