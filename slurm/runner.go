package slurm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Runner runs one command with an argument list and returns what it printed.
// The Client applies per-call timeouts through ctx and classifies failures;
// a Runner only executes. Unit tests inject a fake.
type Runner interface {
	// Run runs name with args (never through a shell). err is non-nil when the
	// command could not start or exited non-zero; stdout and stderr are
	// returned in both cases.
	Run(ctx context.Context, name string, args []string) (stdout, stderr []byte, err error)
}

// ExecRunner runs the Slurm commands with os/exec. It never uses a shell:
// job names, comments and scripts travel as single arguments.
type ExecRunner struct {
	SlurmConf string   // exported as SLURM_CONF when set
	Path      string   // PATH for looking up the commands and for the child; empty: inherit
	TZ        string   // exported as TZ when set, so text times are printed in a known zone
	Env       []string // extra KEY=VALUE entries, last wins
}

// envDropped lists variables that change what the query commands print or
// select (SQUEUE_FORMAT, SQUEUE_USERS, SACCT_FORMAT, SINFO_SORT, ...). They are
// removed from the children's environment so the output is what the parsers
// expect. SBATCH_* variables are kept: they are the user's submission defaults.
var envDropped = []string{"SQUEUE_", "SACCT_", "SINFO_", "SCONTROL_", "SCANCEL_", "SLURM_TIME_FORMAT="}

// environ builds the child's environment.
func (r *ExecRunner) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		drop := false
		for _, p := range envDropped {
			if strings.HasPrefix(kv, p) {
				drop = true
				break
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	env = append(env, "SLURM_TIME_FORMAT=standard")
	if r.SlurmConf != "" {
		env = append(env, "SLURM_CONF="+r.SlurmConf)
	}
	if r.Path != "" {
		env = append(env, "PATH="+r.Path)
	}
	if r.TZ != "" {
		env = append(env, "TZ="+r.TZ)
	}
	return append(env, r.Env...)
}

// Run implements Runner.
func (r *ExecRunner) Run(ctx context.Context, name string, args []string) ([]byte, []byte, error) {
	prog := name
	if r.Path != "" && !strings.ContainsRune(name, '/') {
		p, err := lookPathIn(name, r.Path)
		if err != nil {
			return nil, nil, err
		}
		prog = p
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = r.environ()
	cmd.Stdin = nil
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// After ctx ends the process is killed; give its pipes a moment, then give up.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}

// lookPathIn finds an executable named name in the directories of path.
func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}
