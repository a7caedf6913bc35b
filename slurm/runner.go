package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	// Run runs name with args (never through a shell), with env (KEY=VALUE
	// entries, may be nil) added to its environment. err is non-nil when the
	// command could not start or exited non-zero; stdout and stderr are
	// returned in both cases.
	Run(ctx context.Context, name string, args, env []string) (stdout, stderr []byte, err error)
}

// ExecRunner runs the Slurm commands with os/exec. It never uses a shell:
// job names, comments and scripts travel as single arguments.
type ExecRunner struct {
	SlurmConf string   // exported as SLURM_CONF when set
	Path      string   // PATH for looking up the commands and for the child; empty: inherit
	TZ        string   // exported as TZ when set, so text times are printed in a known zone
	Env       []string // extra KEY=VALUE entries, last wins
	// DieWithParent kills each command (SIGKILL, Linux) when the process
	// running it dies, so that no sbatch outlives a crashed mirage: once
	// mirage is gone, any job it was submitting has reached slurmctld or
	// never will (the chains layer relies on it to bound how long a
	// submission's outcome can stay unknown).
	DieWithParent bool
	// MaxOutput caps what one command may print on stdout and on stderr
	// (each), so that a huge answer cannot exhaust memory: past it the
	// command is killed and Run returns an *OutputLimitError. 0 means
	// DefaultMaxOutput.
	MaxOutput int64
}

// DefaultMaxOutput is the default ExecRunner.MaxOutput: 256 MiB, several
// times the largest sacct answer of a busy cluster's day.
const DefaultMaxOutput = 256 << 20

// outputLimitKey carries a per-call output limit (WithOutputLimit).
type outputLimitKey struct{}

// WithOutputLimit asks the Runner to stop the command run under ctx once it
// has printed more than n bytes (when n is below the Runner's own cap),
// returning an *OutputLimitError: the Client bounds its every-user --json
// reads this way (Config.JSONBudget). Fake Runners may ignore it.
func WithOutputLimit(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, outputLimitKey{}, n)
}

// outputLimit is the per-call limit of ctx (0: none).
func outputLimit(ctx context.Context) int64 {
	n, _ := ctx.Value(outputLimitKey{}).(int64)
	return n
}

// lineSink takes a command's stdout a line at a time as it is printed
// (Client.run with runOpts.lines): the ExecRunner then keeps no copy of it,
// and sets used. A Runner that does not know it returns stdout whole, and
// the Client feeds it to fn itself.
type lineSink struct {
	fn   func(line []byte) // the line without its newline; not kept by fn
	used bool
}

type lineSinkKey struct{}

func withLines(ctx context.Context, fn func([]byte)) (context.Context, *lineSink) {
	s := &lineSink{fn: fn}
	return context.WithValue(ctx, lineSinkKey{}, s), s
}

// lineWriter cuts what a command prints into lines for a lineSink, up to
// max bytes in all (past it, like cappedBuffer, it calls over and fails).
type lineWriter struct {
	fn      func([]byte)
	partial []byte // the start of a line not ended yet
	n, max  int64
	over    func()
	hit     bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if w.hit || w.n+int64(len(p)) > w.max {
		if !w.hit {
			w.hit = true
			w.over()
		}
		return 0, ErrOutputLimit
	}
	w.n += int64(len(p))
	n := len(p)
	for len(p) > 0 {
		k := bytes.IndexByte(p, '\n')
		if k < 0 {
			w.partial = append(w.partial, p...)
			break
		}
		if len(w.partial) > 0 {
			w.partial = append(w.partial, p[:k]...)
			w.fn(w.partial)
			w.partial = w.partial[:0]
		} else {
			w.fn(p[:k])
		}
		p = p[k+1:]
	}
	return n, nil
}

// flush hands over a last line printed without a newline.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 && !w.hit {
		w.fn(w.partial)
	}
	w.partial = nil
}

// ErrOutputLimit is matched (errors.Is) by an *OutputLimitError.
var ErrOutputLimit = errors.New("command output over the limit")

// OutputLimitError reports a command killed because it printed more than
// the limit.
type OutputLimitError struct {
	Cmd   string // the command, e.g. "sacct"
	Limit int64  // the limit in bytes
}

func (e *OutputLimitError) Error() string {
	return fmt.Sprintf("%s printed more than %d bytes (the output limit; raise Config.MaxOutput, or narrow the query); killed", e.Cmd, e.Limit)
}

// Is makes errors.Is(err, ErrOutputLimit) true.
func (e *OutputLimitError) Is(target error) bool { return target == ErrOutputLimit }

// cappedBuffer collects a command's output up to max bytes; the write that
// would pass it calls over (which kills the command) and fails. It grows
// in chunks rather than by doubling one slice: an answer cut at a 32 MiB
// budget then costs 32 MiB of memory, not the 64 MiB (cleared, and faulted
// in) that doubling reached, and one that fits is joined once.
type cappedBuffer struct {
	chunks [][]byte
	n      int64
	max    int64
	over   func()
	hit    bool
}

// Chunk sizes of cappedBuffer: the first, doubling up to the last.
const (
	firstChunk = 32 << 10
	maxChunk   = 4 << 20
)

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.hit || c.n+int64(len(p)) > c.max {
		if !c.hit {
			c.hit = true
			c.over()
		}
		return 0, ErrOutputLimit
	}
	for rest := p; len(rest) > 0; {
		k := len(c.chunks) - 1
		if k < 0 || len(c.chunks[k]) == cap(c.chunks[k]) {
			size := firstChunk
			if k >= 0 {
				size = min(2*cap(c.chunks[k]), maxChunk)
			}
			c.chunks = append(c.chunks, make([]byte, 0, size))
			k++
		}
		m := min(len(rest), cap(c.chunks[k])-len(c.chunks[k]))
		c.chunks[k] = append(c.chunks[k], rest[:m]...)
		rest = rest[m:]
	}
	c.n += int64(len(p))
	return len(p), nil
}

// Bytes returns everything written, in one slice (nil when nothing was).
func (c *cappedBuffer) Bytes() []byte {
	switch len(c.chunks) {
	case 0:
		return nil
	case 1:
		return c.chunks[0]
	}
	out := make([]byte, 0, c.n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	c.chunks = [][]byte{out}
	return out
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
func (r *ExecRunner) Run(ctx context.Context, name string, args, env []string) ([]byte, []byte, error) {
	prog := name
	if r.Path != "" && !strings.ContainsRune(name, '/') {
		p, err := lookPathIn(name, r.Path)
		if err != nil {
			return nil, nil, err
		}
		prog = p
	}
	limit := r.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	if n := outputLimit(ctx); n > 0 && n < limit {
		limit = n
	}
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(r.environ(), env...)
	cmd.Stdin = nil
	out := &cappedBuffer{max: limit, over: kill}
	errb := &cappedBuffer{max: limit, over: kill}
	cmd.Stdout, cmd.Stderr = out, errb
	var lw *lineWriter
	if sink, _ := ctx.Value(lineSinkKey{}).(*lineSink); sink != nil {
		lw = &lineWriter{fn: sink.fn, max: limit, over: kill}
		cmd.Stdout, sink.used = lw, true
	}
	// After ctx ends the process is killed; give its pipes a moment, then give up.
	cmd.WaitDelay = 2 * time.Second
	if r.DieWithParent {
		defer dieWithParent(cmd)()
	}
	err := cmd.Run()
	if lw != nil {
		lw.flush()
		out.hit = lw.hit
	}
	if out.hit || errb.hit {
		return nil, errb.Bytes(), &OutputLimitError{Cmd: name, Limit: limit}
	}
	return out.Bytes(), errb.Bytes(), err
}

// lookPathIn finds an executable named name in the directories of path.
func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // "" and relative entries name wherever mirage happens to run (a directory another user may fill)
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}
