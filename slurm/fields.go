package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// baseState maps one Slurm job state word (long or compact form, "CANCELLED by
// 0" included) to a JobState; ok is false for flags that are not base states
// (COMPLETING, REQUEUED, ...) and for unknown words.
func baseState(w string) (provisioner.JobState, bool) {
	w = strings.ToUpper(strings.TrimSpace(w))
	if i := strings.IndexAny(w, " +"); i >= 0 {
		w = w[:i]
	}
	switch w {
	case "PENDING", "PD":
		return provisioner.StatePending, true
	case "RUNNING", "R", "SUSPENDED", "S":
		return provisioner.StateRunning, true
	case "COMPLETED", "CD", "COMPLETE":
		return provisioner.StateCompleted, true
	case "FAILED", "F", "BOOT_FAIL", "BF", "DEADLINE", "DL":
		return provisioner.StateFailed, true
	case "TIMEOUT", "TO":
		return provisioner.StateTimeout, true
	case "CANCELLED", "CA":
		return provisioner.StateCancelled, true
	case "PREEMPTED", "PR":
		return provisioner.StatePreempted, true
	case "NODE_FAIL", "NF":
		return provisioner.StateNodeFail, true
	case "OUT_OF_MEMORY", "OOM":
		return provisioner.StateOOM, true
	}
	return "", false
}

// flagState maps state flags that squeue's text output shows instead of a base state.
func flagState(w string) (provisioner.JobState, bool) {
	w = strings.ToUpper(strings.TrimSpace(w))
	switch w {
	case "COMPLETING", "CG", "CONFIGURING", "CF", "STAGE_OUT", "SO", "SIGNALING", "SI", "STOPPED", "ST", "RESIZING", "RS":
		return provisioner.StateRunning, true
	case "REQUEUED", "RQ", "REQUEUE_HOLD", "RH", "REQUEUE_FED", "RF", "RESV_DEL_HOLD", "RD":
		return provisioner.StatePending, true
	case "SPECIAL_EXIT", "SE", "REVOKED", "RV", "LAUNCH_FAILED":
		return provisioner.StateFailed, true
	}
	return "", false
}

// mapStates maps a state list (22.05: one word; 23.02+: base state and flags,
// e.g. ["RUNNING","COMPLETING"]) to a JobState: the first base state, else
// the first flag with a meaning, else StateUnknown.
func mapStates(words ...string) provisioner.JobState {
	for _, w := range words {
		if st, ok := baseState(w); ok {
			return st
		}
	}
	for _, w := range words {
		if st, ok := flagState(w); ok {
			return st
		}
	}
	return provisioner.StateUnknown
}

// waitStatus splits a raw wait(2) status (squeue --json 22.05 "exit_code") into exit code and signal.
func waitStatus(st int64) (code, sig int) {
	if st < 0 || st > 0xffff {
		return 0, 0
	}
	if s := int(st & 0x7f); s != 0 {
		return 0, s
	}
	return int(st>>8) & 0xff, 0
}

// gpusFromTRES reads a TRES string such as "cpu=1,node=1,billing=1,gres/gpu=2"
// or "...,gres/gpu=2,gres/gpu:a100=2" and returns the GPU total and the type
// (when exactly one typed entry names it).
func gpusFromTRES(s string) (total int, typ string) {
	typed := 0
	for f := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok || !strings.HasPrefix(k, "gres/gpu") {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			continue
		}
		if k == "gres/gpu" {
			total = n
		} else if t, ok := strings.CutPrefix(k, "gres/gpu:"); ok && t != "" {
			typ = t
			typed += n
		}
	}
	if total == 0 {
		total = typed
	}
	return total, typ
}

// gpusFromGres reads GRES strings as squeue, sinfo and scontrol print them:
// "gpu:4", "gpu:a100:4(S:0-1)", "gres:gpu:2", "gres/gpu:2", "gpu:2(IDX:0-1)",
// "gpu" (one), comma-separated entries adding up; other GRES are ignored.
func gpusFromGres(s string) (total int, typ string) {
	for _, e := range splitOutside(s, ',', '(', ')') {
		e = strings.TrimSpace(e)
		e = strings.TrimPrefix(strings.TrimPrefix(e, "gres:"), "gres/")
		if i := strings.IndexByte(e, '('); i >= 0 {
			e = e[:i]
		}
		parts := strings.Split(e, ":")
		if parts[0] != "gpu" {
			continue
		}
		switch len(parts) {
		case 1:
			total++
		case 2:
			if n, err := strconv.Atoi(parts[1]); err == nil {
				if n > 0 {
					total += n
				}
			} else if parts[1] != "" {
				typ = parts[1]
				total++
			}
		default:
			if n, err := strconv.Atoi(parts[len(parts)-1]); err == nil && n > 0 {
				total += n
				if parts[1] != "" {
					typ = parts[1]
				}
			}
		}
	}
	return total, typ
}

// splitOutside splits s on sep where it is not inside open/close brackets.
func splitOutside(s string, sep, open, close byte) []string {
	if s == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			if depth > 0 {
				depth--
			}
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// maxHostlist caps the names one hostlist may expand to (the largest
// clusters have tens of thousands of nodes).
const maxHostlist = 1 << 16

// maxDocHosts caps the names all hostlists of one document may expand to,
// so that a malformed or hostile output cannot exhaust memory.
const maxDocHosts = 1 << 20

// ErrHostlist reports a hostlist that cannot be expanded.
var ErrHostlist = errors.New("bad hostlist")

// ExpandHostlist expands a Slurm hostlist such as "node[1-3,07],gpu01" into
// names ("node1", "node2", "node3", "node07", "gpu01"). Zero padding follows
// the lower bound of each range. Several bracket groups in one name
// ("r[1-2]n[1-2]") expand as a cross product. Empty and placeholder values
// ("(null)", "None assigned") give nil.
func ExpandHostlist(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if clean(s) == "" {
		return nil, nil
	}
	var out []string
	for _, part := range splitOutside(s, ',', '[', ']') {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		names, err := expandOne(part, maxHostlist-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", s, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// expandOne expands a single (possibly multi-bracket) host expression.
func expandOne(p string, budget int) ([]string, error) {
	i := strings.IndexByte(p, '[')
	if i < 0 {
		if strings.IndexByte(p, ']') >= 0 {
			return nil, fmt.Errorf("%w: stray ']' in %q", ErrHostlist, p)
		}
		if budget < 1 {
			return nil, fmt.Errorf("%w: more than %d names", ErrHostlist, maxHostlist)
		}
		return []string{p}, nil
	}
	j := strings.IndexByte(p[i:], ']')
	if j < 0 {
		return nil, fmt.Errorf("%w: unclosed '[' in %q", ErrHostlist, p)
	}
	prefix, body, rest := p[:i], p[i+1:i+j], p[i+j+1:]
	if strings.ContainsAny(prefix, "]") || strings.ContainsAny(body, "[") {
		return nil, fmt.Errorf("%w: nested brackets in %q", ErrHostlist, p)
	}
	tails, err := expandOne(rest, budget)
	if err != nil {
		return nil, err
	}
	if len(tails) == 0 {
		tails = []string{""}
	}
	var out []string
	for r := range strings.SplitSeq(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		if err1 != nil || a < 0 || lo == "" {
			return nil, fmt.Errorf("%w: bad range %q in %q", ErrHostlist, r, p)
		}
		b := a
		if isRange {
			var err2 error
			b, err2 = strconv.Atoi(hi)
			if err2 != nil || b < a {
				return nil, fmt.Errorf("%w: bad range %q in %q", ErrHostlist, r, p)
			}
		}
		if b-a >= budget || (b-a+1)*len(tails) > budget-len(out) {
			return nil, fmt.Errorf("%w: more than %d names", ErrHostlist, maxHostlist)
		}
		for n := a; n <= b; n++ {
			num := strconv.Itoa(n)
			if pad := len(lo) - len(num); pad > 0 {
				num = strings.Repeat("0", pad) + num
			}
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}

// hostBudget counts the names a document's hostlists may still expand to.
type hostBudget struct{ left int }

func newHostBudget() *hostBudget { return &hostBudget{left: maxDocHosts} }

// errHostBudget reports a document whose hostlists expand to too many names.
var errHostBudget = fmt.Errorf("%w: hostlists expand to more than %d names in one output", ErrHostlist, maxDocHosts)

// nodeList expands a hostlist for a job or node record. A malformed one is
// kept as one raw entry; exceeding the document's budget is an error.
func (h *hostBudget) nodeList(s string) ([]string, error) {
	names, err := ExpandHostlist(s)
	if err != nil {
		names = []string{strings.TrimSpace(s)}
	}
	h.left -= len(names)
	if h.left < 0 {
		return nil, errHostBudget
	}
	return names, nil
}
