package slurm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// ErrBadRequest means a SubmitRequest cannot be turned into sbatch arguments
// safely (it is refused before anything runs). It wraps provisioner.ErrRejected.
var ErrBadRequest = wrapSentinel("invalid submission", provisioner.ErrRejected)

// SbatchArgs builds the sbatch argument list for req. It is pure: the Client
// runs `sbatch` with exactly this list (no shell), so job names, comments
// and paths are passed verbatim and nothing in them is interpreted.
//
// Order: --parsable, then one option per set field of req — --job-name,
// --account, --partition, --qos, --time (D-HH:MM:SS, rounded up to the
// second), --nodes, GPUs, --comment, --dependency, --begin (req.Begin as
// YYYY-MM-DDTHH:MM:SS in the zone of its time.Time value, which sbatch reads
// in its TZ: the Client converts it to the cluster's zone first), --nodelist, --exclude,
// --export=ALL (when req.Env is set: the job gets sbatch's environment, to
// which the Client adds SbatchEnv), --chdir, --output (output, unless
// req.Args already sets -o/--output) — then req.Args verbatim (so the
// caller's own options come later and win), then "--" and the script.
//
// GPUs: when req.Nodes > 0 and req.GPUs divides evenly across them, the
// request is per node, --gres=gpu[:TYPE]:GPUs/Nodes, so every node gets the
// same share (what multi-node training expects); otherwise it is a job total,
// --gpus=[TYPE:]GPUs, which stays exact even when the node count comes from
// the script.
//
// Refused (ErrBadRequest, nothing runs): no script; control characters in any
// field (they would break Slurm's line-based outputs); environment entries
// SbatchEnv refuses; node names holding ',' or spaces; negative counts.
func SbatchArgs(req provisioner.SubmitRequest, output string) ([]string, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
	}
	if req.Script == "" {
		return nil, bad("no batch script given")
	}
	for _, f := range []struct{ name, v string }{
		{"job name", req.Name}, {"script", req.Script}, {"account", req.Account},
		{"partition", req.Partition}, {"QOS", req.QOS}, {"GPU type", req.GPUType},
		{"comment", req.Comment}, {"dependency", req.Dependency.String()}, {"working directory", req.WorkDir},
		{"output", output},
	} {
		if i := strings.IndexFunc(f.v, isControl); i >= 0 {
			return nil, bad("%s %q holds a control character at byte %d", f.name, f.v, i)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"account", req.Account}, {"partition", req.Partition}, {"QOS", req.QOS},
		{"GPU type", req.GPUType}, {"dependency", req.Dependency.String()},
	} {
		if strings.ContainsAny(f.v, " \t") {
			return nil, bad("%s %q holds a space", f.name, f.v)
		}
	}
	if strings.ContainsAny(req.GPUType, ":,=()") {
		// '(' starts a GRES annotation, gpu:TYPE:N(S:0-1): sbatch would not read the type back.
		return nil, bad("GPU type %q holds one of ':', ',', '=', '(' or ')'", req.GPUType)
	}
	if req.Nodes < 0 || req.GPUs < 0 || req.TimeLimit < 0 {
		return nil, bad("negative nodes (%d), GPUs (%d) or time limit (%s)", req.Nodes, req.GPUs, req.TimeLimit)
	}
	args := []string{"--parsable"}
	add := func(opt, v string) {
		if v != "" {
			args = append(args, opt+"="+v)
		}
	}
	add("--job-name", req.Name)
	add("--account", req.Account)
	add("--partition", req.Partition)
	add("--qos", req.QOS)
	add("--time", FormatDuration(req.TimeLimit))
	if req.Nodes > 0 {
		add("--nodes", strconv.Itoa(req.Nodes))
	}
	if req.GPUs > 0 {
		typ := ""
		if req.GPUType != "" {
			typ = req.GPUType + ":"
		}
		if req.Nodes > 0 && req.GPUs%req.Nodes == 0 {
			add("--gres", "gpu:"+typ+strconv.Itoa(req.GPUs/req.Nodes))
		} else {
			add("--gpus", typ+strconv.Itoa(req.GPUs))
		}
	}
	add("--comment", req.Comment)
	add("--dependency", req.Dependency.String())
	if !req.Begin.IsZero() {
		add("--begin", req.Begin.Format(timeLayout))
	}
	for _, l := range []struct {
		opt   string
		nodes []string
	}{{"--nodelist", req.NodeList}, {"--exclude", req.Exclude}} {
		for _, n := range l.nodes {
			if n == "" || strings.ContainsAny(n, ", \t") || strings.IndexFunc(n, isControl) >= 0 {
				return nil, bad("node name %q in %s", n, l.opt)
			}
		}
		add(l.opt, strings.Join(l.nodes, ","))
	}
	if _, err := SbatchEnv(req); err != nil {
		return nil, err
	}
	if len(req.Env) > 0 {
		add("--export", "ALL") // overrides a user's SBATCH_EXPORT, which could drop the variables
	}
	add("--chdir", req.WorkDir)
	if output != "" && !setsOutput(req.Args) {
		add("--output", output)
	}
	args = append(args, req.Args...)
	return append(args, "--", req.Script), nil
}

// timeLayout is Slurm's absolute time (YYYY-MM-DDTHH:MM:SS), as its
// commands print it and read it (sbatch --begin, sacct -S/-E), in their TZ.
const timeLayout = "2006-01-02T15:04:05"

// SbatchEnv lists req.Env as KEY=VALUE entries, keys sorted. The Client
// runs sbatch with them added to its environment, and SbatchArgs passes
// --export=ALL, so the job sees them.
//
// They are not passed as --export=ALL,K=V: sbatch (22.05, as seen) marks any
// job whose --export holds a variable list with SLURM_GET_USER_ENV=1, and
// slurmd then runs a login shell of the user (su -) at every launch, merges
// its environment into the job's, and launches a node's jobs one at a time
// behind it: seconds per job on an idle node, a minute under load.
//
// Refused (ErrBadRequest): keys that are not shell identifiers, keys
// starting with SLURM_ or SBATCH_ (sbatch reads those as its own options and
// settings), values holding a NUL byte.
func SbatchEnv(req provisioner.SubmitRequest) ([]string, error) {
	keys := make([]string, 0, len(req.Env))
	for k, v := range req.Env {
		switch {
		case !isIdent(k):
			return nil, fmt.Errorf("%w: environment key %q is not a name (letters, digits, '_', not starting with a digit)", ErrBadRequest, k)
		case strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "SBATCH_"):
			return nil, fmt.Errorf("%w: environment key %q is one of sbatch's own (SLURM_*, SBATCH_*)", ErrBadRequest, k)
		case strings.IndexByte(v, 0) >= 0:
			return nil, fmt.Errorf("%w: environment value of %s holds a NUL byte", ErrBadRequest, k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env := make([]string, len(keys))
	for i, k := range keys {
		env[i] = k + "=" + req.Env[k]
	}
	return env, nil
}

// Shape is what a job's sbatch options say about its size and place: the
// inverse of the options SbatchArgs writes. A zero field was not given.
type Shape struct {
	TimeLimit   time.Duration // -t/--time; 0 when not given or unlimited
	Unlimited   bool          // -t/--time asked for no limit: 0, UNLIMITED or INFINITE (sbatch(1))
	Nodes       int           // -N/--nodes (the minimum of a range "3-4")
	GPUsPerNode int           // --gres=gpu… (all gpu entries summed) or --gpus-per-node
	GPUsTotal   int           // -G/--gpus
	GPUType     string        // the GPU type the GPU option named, if any
	Account     string        // -A/--account
	Partition   string        // -p/--partition
	Name        string        // -J/--job-name
	// Signal is --signal (its Name is "" when not given): the signal Slurm
	// sends Signal.Lead before the job's limit, for it to checkpoint.
	Signal slurmfmt.Signal
}

// Merge returns s overridden by the options set in o (o comes later on
// sbatch's command line, or on the command line over the script's #SBATCH
// lines, and wins).
func (s Shape) Merge(o Shape) Shape {
	if o.TimeLimit != 0 || o.Unlimited {
		s.TimeLimit, s.Unlimited = o.TimeLimit, o.Unlimited
	}
	if o.Nodes != 0 {
		s.Nodes = o.Nodes
	}
	if o.GPUsPerNode != 0 || o.GPUsTotal != 0 {
		s.GPUsPerNode, s.GPUsTotal, s.GPUType = o.GPUsPerNode, o.GPUsTotal, o.GPUType
	}
	if o.Account != "" {
		s.Account = o.Account
	}
	if o.Partition != "" {
		s.Partition = o.Partition
	}
	if o.Name != "" {
		s.Name = o.Name
	}
	if o.Signal.Name != "" {
		s.Signal = o.Signal
	}
	return s
}

// GPUs is the job's total GPU count: GPUsTotal, else GPUsPerNode on every
// node (one node when none is given).
func (s Shape) GPUs() int {
	if s.GPUsTotal > 0 {
		return s.GPUsTotal
	}
	return s.GPUsPerNode * max(s.Nodes, 1)
}

// Request is the submission of script with this shape (SbatchArgs turns it
// back into options).
func (s Shape) Request(script string) provisioner.SubmitRequest {
	return provisioner.SubmitRequest{Script: script, Name: s.Name, Account: s.Account, Partition: s.Partition,
		TimeLimit: s.TimeLimit, Nodes: s.Nodes, GPUs: s.GPUs(), GPUType: s.GPUType}
}

// shapeOptions are the sbatch options that shape a job (all take a value).
var shapeOptions = map[string]bool{"-t": true, "--time": true, "-N": true, "--nodes": true, "--gres": true, "-G": true, "--gpus": true,
	"--gpus-per-node": true, "-A": true, "--account": true, "-p": true, "--partition": true, "-J": true, "--job-name": true, "--signal": true}

// ParseSbatchArgs reads the sbatch options that shape a job (-t/--time,
// -N/--nodes, --gres, -G/--gpus, --gpus-per-node, -A/--account,
// -p/--partition, -J/--job-name, as "--opt=v", "--opt v", "-xV", "-x V" or
// "-x=V") and --signal, which says when each segment is stopped to
// checkpoint; other options pass untouched, and a bare "--" ends the options
// as in sbatch. Durations, GRES, hostlists and signals are read by
// slurm/slurmfmt.
// Refused: the options SbatchArgs sets itself (--comment, -d/--dependency),
// job arrays (-a/--array) and --wrap, an option without its value, a bad
// value, a negative GPU count.
func ParseSbatchArgs(args []string) (Shape, error) {
	var sh Shape
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		key, val, hasVal := a, "", false
		switch {
		case strings.HasPrefix(a, "--"):
			key, val, hasVal = strings.Cut(a, "=")
		case len(a) > 2 && a[0] == '-' && strings.Contains("tNGApJda", a[1:2]):
			key, val, hasVal = a[:2], strings.TrimPrefix(a[2:], "="), true
		}
		switch key {
		case "--comment", "-d", "--dependency":
			return sh, fmt.Errorf("%s: mirage sets it on every segment (its chain tag, its dependencies); remove it", key)
		case "-a", "--array":
			return sh, fmt.Errorf("%s: job arrays cannot be chained; submit one chain per task", key)
		case "--wrap":
			return sh, errors.New("--wrap: give a batch script instead")
		}
		if !shapeOptions[key] {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return sh, fmt.Errorf("%s needs a value", key)
			}
			i++
			val = args[i]
		}
		var err error
		switch key {
		case "-t", "--time":
			err = sh.setTime(val)
		case "-N", "--nodes":
			lo, _, _ := strings.Cut(val, "-")
			sh.Nodes, err = strconv.Atoi(lo)
			if err == nil && sh.Nodes < 1 {
				err = errors.New("want at least 1")
			}
		case "--gres":
			sh.GPUsPerNode, sh.GPUType, err = slurmfmt.GPUsFromGRES(val)
			sh.GPUsTotal = 0
		case "-G", "--gpus":
			sh.GPUType, sh.GPUsTotal, err = typedCount(val)
			sh.GPUsPerNode = 0
		case "--gpus-per-node":
			sh.GPUType, sh.GPUsPerNode, err = typedCount(val)
			sh.GPUsTotal = 0
		case "-A", "--account":
			sh.Account = val
		case "-p", "--partition":
			sh.Partition = val
		case "-J", "--job-name":
			sh.Name = val
		case "--signal":
			sh.Signal, err = slurmfmt.ParseSignal(val)
		}
		if err != nil {
			return sh, fmt.Errorf("%s %q: %w", key, val, err)
		}
	}
	if sh.GPUsPerNode < 0 || sh.GPUsTotal < 0 {
		return sh, errors.New("negative GPU count")
	}
	return sh, nil
}

// setTime reads a --time value. sbatch(1): "A time limit of zero requests
// that no time limit be imposed"; UNLIMITED and INFINITE say the same. The
// words only Slurm's outputs print (N/A, Partition_Limit) are refused.
func (s *Shape) setTime(v string) error {
	d, err := slurmfmt.ParseDuration(v)
	switch {
	case err != nil:
		return err
	case d.IsUnlimited():
		s.TimeLimit, s.Unlimited = 0, true
	case d.Kind == slurmfmt.Set:
		s.TimeLimit, s.Unlimited = d.Value, false
	default:
		return fmt.Errorf("%w %q: not a time limit sbatch accepts", slurmfmt.ErrDuration, v)
	}
	return nil
}

// typedCount reads --gpus and --gpus-per-node values: [TYPE:]COUNT.
func typedCount(v string) (typ string, n int, err error) {
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		typ, v = v[:i], v[i+1:]
	}
	n, err = strconv.Atoi(v)
	return typ, n, err
}

// ParseBatchScript reads the #SBATCH lines at the top of a batch script as
// sbatch does: the first line must start with #!, and directives end at the
// first line that is neither blank nor a comment (sbatch(1): "before any
// executable commands"); a '#' after a directive's options starts a
// comment. The options are read by ParseSbatchArgs.
func ParseBatchScript(r io.Reader) (Shape, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1024*1024) // grows for long lines; a daemon cycle reads one script per chain
	var args []string
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if line == 1 && !strings.HasPrefix(t, "#!") {
			return Shape{}, errors.New("line 1: a batch script must start with #! (e.g. #!/bin/bash)")
		}
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "#") {
			break
		}
		rest, ok := strings.CutPrefix(t, "#SBATCH")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if strings.HasPrefix(f, "#") {
				break
			}
			args = append(args, f)
		}
	}
	if err := sc.Err(); err != nil {
		return Shape{}, err
	}
	if line == 0 {
		return Shape{}, errors.New("empty file: a batch script must start with #! (e.g. #!/bin/bash)")
	}
	sh, err := ParseSbatchArgs(args)
	if err != nil {
		return sh, fmt.Errorf("#SBATCH: %w", err)
	}
	return sh, nil
}

// setsOutput reports whether sbatch options set the output file.
func setsOutput(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-o" || a == "--output" || strings.HasPrefix(a, "--output=") ||
			(strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--")) {
			return true
		}
	}
	return false
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validJobID checks a job id before it goes on a command line: "123",
// "123_4", "123_[1-3]" (never starting with '-').
func validJobID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty job id", provisioner.ErrNotFound)
	}
	base, task, isArray := strings.Cut(id, "_")
	if base == "" || strings.Trim(base, "0123456789") != "" {
		return fmt.Errorf("job id %q: want digits, optionally _TASK: %w", id, errBadID)
	}
	if isArray {
		t := strings.TrimSuffix(strings.TrimPrefix(task, "["), "]")
		if t == "" || strings.Trim(t, "0123456789-,%") != "" {
			return fmt.Errorf("job id %q: bad array task: %w", id, errBadID)
		}
	}
	return nil
}

var errBadID = errors.New("malformed job id")

// validSignal checks a signal name or number for scancel --signal
// ("USR1", "SIGUSR1", "10", "TERM").
func validSignal(sig string) error {
	if sig == "" || len(sig) > 16 {
		return fmt.Errorf("signal %q: want a name such as USR1 or a number", sig)
	}
	for _, c := range sig {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return fmt.Errorf("signal %q: want an upper-case name such as USR1 or a number", sig)
		}
	}
	return nil
}
