package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// backendOptions choose and configure the cluster backend of the chain commands.
type backendOptions struct {
	kind      string        // --backend: slurm (default) or kubernetes
	rules     string        // --rules: team rules file (quota, packing, borrowing)
	slurm     slurm.Options // --slurm-conf, --slurm-bin, --slurm-timeout
	kube      k8sFlags      // --kubeconfig and the team mapping (Kubernetes)
	namespace string        // --namespace: where Kubernetes work is deployed
	image     string        // --image: container image of Kubernetes work
	binding   string        // --binding: how a pod reaches its node (affinity or node-name)
	annotate  []string      // --pod-annotation KEY=VALUE: extra annotations of every pod
	// scriptDir is where the chain commands keep the private copies of job
	// scripts (not a flag: the state directory's scripts/); Slurm submits
	// from there only (slurm.Options.ScriptDir). "" for commands that
	// submit nothing.
	scriptDir string
	// viewMemo is where the Slurm client remembers a switch to the
	// compact view (slurm.ViewMemoName in the state directory; "" for the
	// commands without one).
	viewMemo string
	loaded   *team.Rules // --rules, once read (loadRules)
}

func (o *backendOptions) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kind, "backend", "slurm", "cluster backend: slurm or kubernetes (kubernetes needs --rules: the team rules choose the node)")
	f.StringVar(&o.rules, "rules", "", "team rules file (YAML/JSON: quotas, borrowing, packing); see mirage place --help")
	f.StringVar(&o.slurm.SlurmConf, "slurm-conf", "", "slurm.conf of the cluster (default: $SLURM_CONF, else Slurm's own default)")
	f.StringVar(&o.slurm.Bin, "slurm-bin", "", "directory holding sbatch, squeue, sacct, scancel (default: search PATH)")
	f.DurationVar(&o.slurm.Timeout, "slurm-timeout", 30*time.Second, "timeout of each Slurm command")
	f.StringVar(&o.slurm.View, "slurm-view", slurm.ViewAuto, "how every user's jobs are read: auto (--json, switching to compact text once an answer passes 32 MiB, remembered for a day), compact (text from the start: big clusters), json (--json whatever its size)")
	o.kube.add(cmd)
	f.StringVar(&o.namespace, "namespace", "", "kubernetes: namespace for deployed work of teams without a mapped namespace (default \"default\")")
	f.StringVar(&o.image, "image", "", "kubernetes: container image of the work; the chain's script is run in it (default busybox:1.36)")
	f.StringVar(&o.binding, "binding", string(k8s.BindAffinity), "kubernetes: how a pod reaches the node the rules chose: affinity (the scheduler binds it, held to that node) or node-name (mirage binds it: no scheduler)")
	f.StringArrayVar(&o.annotate, "pod-annotation", nil, "kubernetes: KEY=VALUE annotation on every pod mirage creates (repeatable)")
}

// openBackend builds the cluster backend: a Slurm client or a Kubernetes
// client (which needs --rules: the team rules choose each pod's node);
// getenv is the environment. The rules themselves are the engine's
// (loadRules), loaded once by the command; the adapters only learn what
// they need to carry the rules' decisions out (the teams, the borrowed
// QOS, the namespace mapping).
func openBackend(o *backendOptions, getenv func(string) string) (provisioner.Cluster, error) {
	rules, err := o.loadRules()
	if err != nil {
		return nil, err
	}
	switch o.kind {
	case "", "slurm":
		so := o.slurm
		so.Getenv, so.ScriptDir, so.ViewMemo = getenv, o.scriptDir, o.viewMemo
		var accounts []string
		if rules != nil {
			rc := rules.Config()
			accounts = rc.TeamNames()
		}
		return slurm.OpenChains(so, accounts)
	case "kubernetes", "k8s":
		if rules == nil {
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, errors.New("--backend kubernetes needs --rules: the team rules choose each job's node"))
		}
		cfg, err := o.kube.config(rules)
		if err != nil {
			return nil, err
		}
		cfg.Namespace, cfg.Image = o.namespace, o.image
		if cfg.Binding, err = parseBinding(o.binding); err != nil {
			return nil, err
		}
		if cfg.PodAnnotations, err = parseAnnotations(o.annotate); err != nil {
			return nil, err
		}
		return o.kube.client(cfg)
	}
	return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--backend %q: want slurm or kubernetes", o.kind))
}

// parseBinding reads --binding.
func parseBinding(v string) (k8s.Binding, error) {
	switch b := k8s.Binding(v); b {
	case k8s.BindAffinity, k8s.BindNodeName:
		return b, nil
	}
	return "", cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--binding %q: want %s or %s", v, k8s.BindAffinity, k8s.BindNodeName))
}

// parseAnnotations reads the --pod-annotation KEY=VALUE pairs (nil for none).
func parseAnnotations(pairs []string) (map[string]string, error) {
	var out map[string]string
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("--pod-annotation %q: want KEY=VALUE", kv))
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}

// loadRules reads --rules once per command (nil without it) and keeps
// them: the engine applies them, and the adapters learn the teams from
// them.
func (o *backendOptions) loadRules() (*team.Rules, error) {
	if o.rules == "" || o.loaded != nil {
		return o.loaded, nil
	}
	r, err := loadRules(o.rules)
	if err != nil {
		return nil, err
	}
	o.loaded = r
	return r, nil
}

// capabilities are what the chosen backend does by itself, as its
// snapshots will say (for choices made before any snapshot: submit's
// default policy).
func (o *backendOptions) capabilities() provisioner.Capabilities {
	if o.kind == "kubernetes" || o.kind == "k8s" {
		return k8s.Capabilities
	}
	return slurm.Capabilities
}

// ping asks the backend whether it answers (provisioner.Ping), for an answer
// within seconds naming the controller and the slurm.conf, with exit code 4.
func ping(ctx context.Context, cl provisioner.Cluster) error {
	return stateErr(provisioner.Ping(ctx, cl))
}

// stateOptions locate the state directory.
type stateOptions struct{ state.Location }

func (o *stateOptions) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Dir, "state", "", "state directory (default: $XDG_STATE_HOME/mirage, else ~/.local/state/mirage)")
	f.DurationVar(&o.LockWait, "lock-wait", 30*time.Second, "how long to wait for a running daemon cycle to release the lock")
	f.DurationVar(&o.BusyTimeout, "busy-timeout", 5*time.Second, "how long to wait for another process's database lock")
}

// tagKey is the key that signs and verifies the comments of the user's jobs
// (state.Location.TagKey); making one is said once, on stderr.
func (o *stateOptions) tagKey(f *Factory) (*provisioner.TagKey, error) {
	key, made, err := o.TagKey(f.Now())
	if made {
		fmt.Fprintf(f.ErrOut, "mirage: made %s, the key that signs your jobs' comments (back it up with the database); older jobs are trusted on their owner\n", state.KeyName)
	}
	return key, stateErr(err)
}

func (o *stateOptions) open(ctx context.Context) (*state.Store, error) {
	st, err := o.Open(ctx)
	return st, stateErr(err)
}

// newEngine wires the engine for the chain commands (grace:
// --submit-grace; rules: --rules, nil without). A learned policy whose
// model is missing or unusable is replaced by lead, with a warning, so
// that its chains go on.
func newEngine(f *Factory, cl provisioner.Cluster, rules *team.Rules, st provisioner.Store, key *provisioner.TagKey, grace time.Duration, pol policyOptions) *provisioner.Engine {
	fault := faultHook(f.Getenv("MIRAGE_TEST_CRASH_AT"), f.Getenv("MIRAGE_TEST_PAUSE_AT"), os.Exit)
	e := &provisioner.Engine{Cluster: cl, Store: st, Clock: provisioner.ClockFunc(f.Now), Policies: policyResolver(f, pol.dir(f), pol.lead),
		Fault: fault, SubmitGrace: grace, Self: provisioner.SelfOf(cl), TagKey: key}
	if rules != nil {
		e.Rules = rules
	}
	return e
}

// policyResolver resolves the chains' policies for an engine's life: one
// registry per models directory (a chain that recorded its own, submit
// --models, is decided from it; the others from defaultDir), each keeping
// the models it loaded until their files change, so that a daemon running
// many cycles reads each model once. A learned policy whose model cannot
// be loaded is replaced by lead, with a warning, until it can. lead > 0
// is the lead of the lead and pin baselines (daemon --lead; 0: theirs).
func policyResolver(f *Factory, defaultDir string, lead time.Duration) provisioner.PolicyResolver {
	warn := func(name string, err error) {
		slog.Warn("learned policy unavailable: lead decides for its chains until its model is back", "policy", name, "err", err)
	}
	var mu sync.Mutex
	byDir := map[string]provisioner.PolicyFactory{}
	return func(k provisioner.PolicyKey) (provisioner.Policy, error) {
		dir := cmp.Or(k.Models, defaultDir)
		mu.Lock()
		pf, ok := byDir[dir]
		if !ok {
			pf = models.WithFallback(withLead(f.Policies(dir), lead), provisioner.PolicyLead, warn)
			byDir[dir] = pf
		}
		mu.Unlock()
		return pf(k.Name)
	}
}

// withLead builds the lead and pin baselines with the given lead (the
// daemon's --lead), used as given (provisioner.WithLead), and every other
// policy with pf; lead ≤ 0 leaves pf as it is (their DefaultLead, scaled
// by the limit).
func withLead(pf provisioner.PolicyFactory, lead time.Duration) provisioner.PolicyFactory {
	if lead <= 0 {
		return pf
	}
	return func(name string) (provisioner.Policy, error) {
		if name == provisioner.PolicyLead || name == provisioner.PolicyPin {
			return provisioner.BaselinePolicy(name, provisioner.WithLead(lead))
		}
		return pf(name)
	}
}

// policyOptions locate the learned policies' models (--models) and, for
// the daemon, the baselines' lead (--lead; 0 where the command has none).
type policyOptions struct {
	modelsDir string
	lead      time.Duration
}

// addLead adds --lead (the daemon: it decides the successors).
func (o *policyOptions) addLead(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&o.lead, "lead", 0, "how long before a predecessor's limit the lead and pin policies submit its successor "+
		"while nodes are free: one decision cycle, so set it to your cron period, used as given (default: 10m, at most a quarter of the limit); "+
		"pin queues pinned at once when none are free")
}

func (o *policyOptions) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.modelsDir, "models", "", "directory of trained models (mirage train --out) holding the learned policies "+
		"(default: $MIRAGE_MODELS, else $XDG_DATA_HOME/mirage/models, else ~/.local/share/mirage/models)")
}

// dir is the models directory: --models, else the default.
func (o *policyOptions) dir(f *Factory) string {
	return cmp.Or(o.modelsDir, models.DefaultDir(f.Getenv))
}

// factory resolves policy names, learned ones from the models directory.
func (o *policyOptions) factory(f *Factory) provisioner.PolicyFactory { return f.Policies(o.dir(f)) }

// addSubmitGrace adds --submit-grace to a command that submits.
func addSubmitGrace(cmd *cobra.Command, v *time.Duration) {
	cmd.Flags().DurationVar(v, "submit-grace", provisioner.DefaultSubmitGrace,
		"how long a submission whose outcome was never recorded (mirage stopped mid-sbatch, or sbatch gave no answer) holds its chain "+
			"before it is taken as not done; longer than the Slurm command timeout")
}
