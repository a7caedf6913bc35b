package team

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
)

// ErrBadSnapshot marks a snapshot file that cannot be read or is
// inconsistent (errors.Is finds it; the message is the cause's).
var ErrBadSnapshot = errors.New("invalid snapshot")

// snapshotError is a snapshot error whose message is its own and which
// matches ErrBadSnapshot.
type snapshotError struct{ err error }

func (e snapshotError) Error() string   { return e.err.Error() }
func (e snapshotError) Unwrap() []error { return []error{e.err, ErrBadSnapshot} }

func badSnapshot(format string, args ...any) error {
	return snapshotError{fmt.Errorf(format, args...)}
}

// LoadSnapshot reads a snapshot file (YAML or JSON) and checks it
// (ParseSnapshot).
func LoadSnapshot(path string) (*provisioner.Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return ParseSnapshot(data, path)
}

// ParseSnapshot reads a cluster snapshot written by hand for a dry run (YAML
// or JSON; field names those of provisioner.Snapshot, matched without regard
// to case) and checks it: at least one node, node names unique, GPU counts
// within [0, placement.MaxNodeGPUs] with no more used than there are, node
// states up (the default), drained, down or reserved, and running jobs only
// on listed nodes. Job states are upper-cased (Slurm's names). The snapshot
// is judged as Slurm would treat its jobs (its Caps are Slurm's: work that
// cannot start now is queued). name is used in error messages, which wrap
// ErrBadSnapshot.
func ParseSnapshot(data []byte, name string) (*provisioner.Snapshot, error) {
	sf, err := provisioner.DecodeSnapshot(data)
	if err != nil {
		return nil, badSnapshot("snapshot %s: %w", name, err)
	}
	s := *sf.Snapshot
	s.Caps = provisioner.Capabilities{Queues: true, Unpins: true}
	if len(s.Nodes) == 0 {
		return nil, badSnapshot("snapshot %s: no nodes (want a \"nodes:\" list)", name)
	}
	seen := map[string]bool{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		switch {
		case n.Name == "":
			return nil, badSnapshot("snapshot %s: nodes[%d]: no name", name, i)
		case seen[n.Name]:
			return nil, badSnapshot("snapshot %s: node %s listed twice", name, n.Name)
		case n.GPUs > placement.MaxNodeGPUs:
			return nil, badSnapshot("snapshot %s: node %s: %d GPUs, more than %d", name, n.Name, n.GPUs, placement.MaxNodeGPUs)
		case n.GPUs < 0 || n.GPUsUsed < 0 || n.GPUsUsed > n.GPUs:
			return nil, badSnapshot("snapshot %s: node %s: gpusUsed %d of gpus %d", name, n.Name, n.GPUsUsed, n.GPUs)
		}
		seen[n.Name] = true
		switch n.State {
		case "":
			n.State = provisioner.NodeUp
		case provisioner.NodeUp, provisioner.NodeDrained, provisioner.NodeDown, provisioner.NodeReserved:
		default:
			return nil, badSnapshot("snapshot %s: node %s: state %q (want up, drained, down or reserved)", name, n.Name, n.State)
		}
	}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		j.State = provisioner.JobState(strings.ToUpper(string(j.State)))
		for _, n := range j.NodeList {
			if !seen[n] {
				return nil, badSnapshot("snapshot %s: job %s runs on unknown node %s", name, j.ID, n)
			}
		}
	}
	return &s, nil
}
