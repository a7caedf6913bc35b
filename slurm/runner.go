package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Runner runs one command with arguments and returns its output.
type Runner interface {
	// Run runs name with args (no shell), feeding stdin if non-nil.
	Run(ctx context.Context, name string, args []string, stdin io.Reader) (stdout, stderr []byte, err error)
}

// ExecRunner runs commands with os/exec; it never uses a shell.
type ExecRunner struct {
	Bin       string        // directory of the Slurm commands; empty: search PATH
	SlurmConf string        // exported as SLURM_CONF when set
	Path      string        // PATH for the child; empty: inherit
	Timeout   time.Duration // per call; 0 means 30 s
}

// Run implements Runner.
func (r *ExecRunner) Run(ctx context.Context, name string, args []string, stdin io.Reader) ([]byte, []byte, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prog := name
	if r.Bin != "" {
		prog = filepath.Join(r.Bin, name)
	} else if r.Path != "" {
		p, err := lookPathIn(name, r.Path)
		if err != nil {
			return nil, nil, err
		}
		prog = p
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	env := os.Environ()
	if r.SlurmConf != "" {
		env = append(env, "SLURM_CONF="+r.SlurmConf)
	}
	if r.Path != "" {
		env = append(env, "PATH="+r.Path)
	}
	cmd.Env = env
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%s timed out after %s: %w", name, timeout, context.DeadlineExceeded)
	}
	return out.Bytes(), errb.Bytes(), err
}

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

// errorIs reports whether err is (or wraps) one of targets.
func errorIs(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// firstLine returns the first non-empty line of b, trimmed.
func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
