package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/team"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/spf13/cobra"
)

// backendOptions choose and configure the cluster backend of the chain commands.
type backendOptions struct {
	kind      string        // --backend: slurm (default) or kubernetes
	rules     string        // --rules: team rules file (quota, packing, borrowing)
	slurmConf string        // --slurm-conf (default $SLURM_CONF)
	slurmBin  string        // --slurm-bin: directory of the Slurm commands (default: PATH)
	timeout   time.Duration // per Slurm command
	kube      k8sFlags      // --kubeconfig and the team mapping (Kubernetes)
	namespace string        // --namespace: where Kubernetes work is deployed
	image     string        // --image: container image of Kubernetes work
}

func (o *backendOptions) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kind, "backend", "slurm", "cluster backend: slurm or kubernetes (kubernetes needs --rules: the team rules choose the node)")
	f.StringVar(&o.rules, "rules", "", "team rules file (YAML/JSON: quotas, borrowing, packing); see mirage place --help")
	f.StringVar(&o.slurmConf, "slurm-conf", "", "slurm.conf of the cluster (default: $SLURM_CONF, else Slurm's own default)")
	f.StringVar(&o.slurmBin, "slurm-bin", "", "directory holding sbatch, squeue, sacct, scancel (default: search PATH)")
	f.DurationVar(&o.timeout, "slurm-timeout", 30*time.Second, "timeout of each Slurm command")
	o.kube.add(cmd)
	f.StringVar(&o.namespace, "namespace", "", "kubernetes: namespace for deployed work of teams without a mapped namespace (default \"default\")")
	f.StringVar(&o.image, "image", "", "kubernetes: container image of the work; the chain's script is run in it (default busybox:1.36)")
}

// newBackend builds the cluster backend: Slurm through its commands (with
// --rules, the engine applies the team rules before each submission), or
// Kubernetes through client-go with the team rules applied at submission
// (k8s.TeamCluster: quota, packing, borrowing, reclaim). getenv is the
// environment (SLURM_CONF, PATH).
func newBackend(o *backendOptions, getenv func(string) string) (provisioner.Cluster, error) {
	switch o.kind {
	case "", "slurm":
		return newSlurmBackend(o, getenv)
	case "kubernetes", "k8s":
		if o.rules == "" {
			return nil, withCode(exitUsage, errors.New("--backend kubernetes needs --rules: the team rules choose each job's node"))
		}
		rules, err := loadRules(o.rules, false)
		if err != nil {
			return nil, err
		}
		cfg, err := o.kube.config()
		if err != nil {
			return nil, err
		}
		cfg.Namespace, cfg.Image = o.namespace, o.image
		c, err := o.kube.client(cfg)
		if err != nil {
			return nil, err
		}
		return k8s.NewTeamCluster(c, rules), nil
	}
	return nil, withCode(exitUsage, fmt.Errorf("--backend %q: want slurm or kubernetes", o.kind))
}

// newSlurmBackend builds the Slurm client: SLURM_CONF from --slurm-conf or
// the environment, the commands from --slurm-bin before PATH, each command
// bounded by --slurm-timeout and killed if mirage dies (so a crashed daemon
// leaves no sbatch running). With --rules it is wrapped (slurm.TeamCluster) so the engine
// applies the team rules (team = account; borrowed work gets the rules'
// preemptible QOS).
func newSlurmBackend(o *backendOptions, getenv func(string) string) (provisioner.Cluster, error) {
	var rules *team.Rules
	if o.rules != "" {
		r, err := loadRules(o.rules, true) // Slurm queues what cannot start yet
		if err != nil {
			return nil, err
		}
		rules = r
	}
	if o.timeout <= 0 {
		return nil, withCode(exitUsage, fmt.Errorf("--slurm-timeout %s: want a positive duration", o.timeout))
	}
	conf := o.slurmConf
	if conf == "" {
		conf = getenv("SLURM_CONF")
	}
	if conf != "" {
		abs, err := filepath.Abs(conf)
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("--slurm-conf %s: %w", conf, err))
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, withCode(exitBadInput, fmt.Errorf("slurm.conf %s: %w (give the cluster's configuration with --slurm-conf or SLURM_CONF)", abs, err))
		}
		conf = abs
	}
	bin := ""
	if o.slurmBin != "" {
		dir, err := filepath.Abs(o.slurmBin)
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("--slurm-bin %s: %w", o.slurmBin, err))
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, withCode(exitBadInput, fmt.Errorf("--slurm-bin %s: not a directory", o.slurmBin))
		}
		bin = dir
	}
	cl, err := slurm.Open(slurm.Options{SlurmConf: conf, Bin: bin, Timeout: o.timeout, DieWithParent: true, Getenv: getenv})
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	if rules == nil {
		return cl, nil
	}
	return slurm.NewTeamCluster(cl, rules), nil
}

// engineRules are the team rules the engine consults before each
// submission: the backend's own when it applies them (Slurm with --rules,
// Kubernetes), else none.
func engineRules(cl provisioner.Cluster) provisioner.Rules {
	if rc, ok := cl.(provisioner.RulesCluster); ok {
		return rc.TeamRules()
	}
	return nil
}

// stateOptions locate the state directory.
type stateOptions struct {
	dir      string        // --state
	lockWait time.Duration // how long commands other than the daemon wait for the lock
	busy     time.Duration // SQLite busy timeout
}

func (o *stateOptions) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.dir, "state", "", "state directory (default: $XDG_STATE_HOME/mirage, else ~/.local/state/mirage)")
	f.DurationVar(&o.lockWait, "lock-wait", 30*time.Second, "how long to wait for a running daemon cycle to release the lock")
	f.DurationVar(&o.busy, "busy-timeout", 5*time.Second, "how long to wait for another process's database lock")
}

func (o *stateOptions) resolve() (string, error) {
	if o.dir != "" {
		abs, err := filepath.Abs(o.dir)
		if err != nil {
			return "", withCode(exitUsage, fmt.Errorf("--state %s: %w", o.dir, err))
		}
		return abs, nil
	}
	d, err := state.DefaultDir()
	if err != nil {
		return "", withCode(exitUnavailable, err)
	}
	return d, nil
}

// open opens the state database, mapping its failures to exit codes.
func (o *stateOptions) open(ctx context.Context) (*state.Store, error) {
	dir, err := o.resolve()
	if err != nil {
		return nil, err
	}
	st, err := state.Open(ctx, dir, state.Options{BusyTimeout: o.busy})
	if err != nil {
		return nil, stateErr(err)
	}
	return st, nil
}

// lock takes the daemon lock beside the database, waiting up to lockWait.
func (o *stateOptions) lock(ctx context.Context, wait time.Duration) (*state.Lock, error) {
	dir, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, withCode(exitUnavailable, fmt.Errorf("state directory %s: %w", dir, err))
	}
	path := filepath.Join(dir, state.LockName)
	if wait <= 0 {
		return state.TryLock(path)
	}
	l, err := state.WaitLock(ctx, path, wait)
	if errors.Is(err, state.ErrHeld) {
		return nil, withCode(exitUnavailable, fmt.Errorf("%w: a mirage daemon cycle has kept it for %s; try again (or raise --lock-wait)", err, wait))
	}
	return l, err
}

// stateErr maps state and backend errors to exit codes.
func stateErr(err error) error {
	var ee *exitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return err
	case errors.Is(err, state.ErrCorrupt), errors.Is(err, state.ErrLocked), errors.Is(err, state.ErrTooNew),
		errors.Is(err, provisioner.ErrUnavailable), errors.Is(err, state.ErrHeld):
		return withCode(exitUnavailable, err)
	case errors.Is(err, state.ErrUnsafe):
		return withCode(exitUnsafe, err)
	case errors.Is(err, provisioner.ErrChainNotFound):
		return withCode(exitBadInput, fmt.Errorf("%w (list chains with mirage status)", err))
	case errors.Is(err, provisioner.ErrRejected):
		return withCode(exitRejected, err)
	}
	return err
}

// Test-only fault injection, read from the environment by the command
// layer only: MIRAGE_TEST_CRASH_AT=POINT[:N] exits the process (code 99,
// as a crash would, without cleanup) the Nth time (default first) the
// engine reaches POINT (provisioner.Fault* names, or "after-lock");
// MIRAGE_TEST_PAUSE_AT=POINT:DURATION sleeps there.
const crashExitCode = 99

func faultHook(getenv func(string) string) func(point string) {
	crash, pause := getenv("MIRAGE_TEST_CRASH_AT"), getenv("MIRAGE_TEST_PAUSE_AT")
	if crash == "" && pause == "" {
		return nil
	}
	crashPoint, nth := crash, 1
	if p, n, ok := strings.Cut(crash, ":"); ok {
		crashPoint = p
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			nth = v
		}
	}
	pausePoint, pauseFor := "", time.Duration(0)
	if p, d, ok := strings.Cut(pause, ":"); ok {
		if v, err := time.ParseDuration(d); err == nil {
			pausePoint, pauseFor = p, v
		}
	}
	seen := 0
	return func(point string) {
		if point == pausePoint {
			time.Sleep(pauseFor)
		}
		if point == crashPoint {
			seen++
			if seen == nth {
				slog.Warn("test fault injection: crashing", "point", point)
				os.Exit(crashExitCode)
			}
		}
	}
}

// newEngine wires the engine for the chain commands; grace is
// --submit-grace (0: provisioner.DefaultSubmitGrace).
func newEngine(f *Factory, cl provisioner.Cluster, st provisioner.Store, grace time.Duration) *provisioner.Engine {
	return &provisioner.Engine{Cluster: cl, Store: st, Clock: f.clock(), Policies: f.Policies, Rules: engineRules(cl), Fault: faultHook(f.Getenv),
		SubmitGrace: grace}
}

// addSubmitGrace adds --submit-grace to a command that submits.
func addSubmitGrace(cmd *cobra.Command, v *time.Duration) {
	cmd.Flags().DurationVar(v, "submit-grace", provisioner.DefaultSubmitGrace,
		"how long a submission whose outcome was never recorded (mirage stopped mid-sbatch, or sbatch gave no answer) holds its chain "+
			"before it is taken as not done; longer than the Slurm command timeout")
}

// liveSlurm is predict-wait's live cluster: the Slurm client of its
// flags, read-only (squeue, sinfo, sacct).
func liveSlurm(o *predictWaitOptions, getenv func(string) string) (*slurm.Client, error) {
	return slurm.Open(slurm.Options{SlurmConf: o.slurmConf, Bin: o.slurmBin, Timeout: o.slurmTimeout, Getenv: getenv})
}
