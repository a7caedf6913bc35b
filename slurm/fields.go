package slurm

import (
	"fmt"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
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
// or "...,gres/gpu=2,gres/gpu:a100=2" (slurmfmt.GPUsFromTRES) leniently:
// a malformed entry is skipped, the others still count.
func gpusFromTRES(s string) (total int, typ string) {
	total, typ, _ = slurmfmt.GPUsFromTRES(s)
	return total, typ
}

// gpusFromGres reads GRES strings as squeue, sinfo and scontrol print them
// ("gpu:4", "gpu:a100:4(S:0-1)", "gres/gpu:2", "gpu" is one; entries add up;
// slurmfmt.GPUsFromGRES) leniently: a malformed entry is skipped.
func gpusFromGres(s string) (total int, typ string) {
	total, typ, _ = slurmfmt.GPUsFromGRES(s)
	return total, typ
}

// maxHostlist caps the names one hostlist may expand to (the largest
// clusters have tens of thousands of nodes).
const maxHostlist = 1 << 16

// maxDocHosts caps the names all hostlists of one document may expand to,
// so that a malformed or hostile output cannot exhaust memory.
const maxDocHosts = 1 << 20

// ErrHostlist reports a hostlist that cannot be expanded (it is
// slurmfmt.ErrHostlist).
var ErrHostlist = slurmfmt.ErrHostlist

// expandHostlist expands a hostlist of a Slurm output
// (slurmfmt.ExpandHostlist, at most maxHostlist names); the placeholders
// Slurm prints for "no nodes" ("(null)", "None assigned", "N/A") give nil.
func expandHostlist(s string) ([]string, error) {
	if clean(s) == "" {
		return nil, nil
	}
	return slurmfmt.ExpandHostlist(s, maxHostlist)
}

// hostBudget counts the names a document's hostlists may still expand to.
type hostBudget struct{ left int }

func newHostBudget() *hostBudget { return &hostBudget{left: maxDocHosts} }

// errHostBudget reports a document whose hostlists expand to too many names.
var errHostBudget = fmt.Errorf("%w: hostlists expand to more than %d names in one output", ErrHostlist, maxDocHosts)

// nodeList expands a hostlist for a job or node record. A malformed one is
// kept as one raw entry; exceeding the document's budget is an error.
func (h *hostBudget) nodeList(s string) ([]string, error) {
	names, err := expandHostlist(s)
	if err != nil {
		names = []string{strings.TrimSpace(s)}
	}
	h.left -= len(names)
	if h.left < 0 {
		return nil, errHostBudget
	}
	return names, nil
}
