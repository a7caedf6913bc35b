package slurm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
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
// second), --nodes, GPUs, --comment, --dependency, --nodelist, --exclude,
// --export=ALL,K=V,... (keys sorted), --chdir, --output (output, unless
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
// field (they would break Slurm's line-based outputs); environment keys that
// are not shell identifiers and values holding ',' (--export's list
// separator; pass such values through a file instead); node names holding ','
// or spaces; negative counts.
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
		{"comment", req.Comment}, {"dependency", req.Dependency}, {"working directory", req.WorkDir},
		{"output", output},
	} {
		if i := strings.IndexFunc(f.v, isControl); i >= 0 {
			return nil, bad("%s %q holds a control character at byte %d", f.name, f.v, i)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"account", req.Account}, {"partition", req.Partition}, {"QOS", req.QOS},
		{"GPU type", req.GPUType}, {"dependency", req.Dependency},
	} {
		if strings.ContainsAny(f.v, " \t") {
			return nil, bad("%s %q holds a space", f.name, f.v)
		}
	}
	if strings.ContainsAny(req.GPUType, ":,=") {
		return nil, bad("GPU type %q holds one of ':', ',' or '='", req.GPUType)
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
	add("--dependency", req.Dependency)
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
	if len(req.Env) > 0 {
		keys := make([]string, 0, len(req.Env))
		for k := range req.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		b.WriteString("ALL")
		for _, k := range keys {
			v := req.Env[k]
			if !isIdent(k) {
				return nil, bad("environment key %q is not a name (letters, digits, '_', not starting with a digit)", k)
			}
			if strings.ContainsRune(v, ',') {
				return nil, bad("environment value of %s holds ',', which --export=ALL,K=V cannot carry", k)
			}
			if strings.IndexFunc(v, func(r rune) bool { return r == 0 }) >= 0 {
				return nil, bad("environment value of %s holds a NUL byte", k)
			}
			b.WriteString("," + k + "=" + v)
		}
		add("--export", b.String())
	}
	add("--chdir", req.WorkDir)
	if output != "" && !setsOutput(req.Args) {
		add("--output", output)
	}
	args = append(args, req.Args...)
	return append(args, "--", req.Script), nil
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
