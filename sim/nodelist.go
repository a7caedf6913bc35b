package sim

import (
	"fmt"

	"github.com/mirage-gpu/mirage/traces"
)

// WithNodeList returns base with its nodes and partitions replaced by the
// machines of a node list (traces.ReadNodes: the openb node lists of a
// Kubernetes GPU cluster). The cluster becomes one shared partition "all"
// of every node (jobs take GPUs and CPUs, not whole nodes, as pods do)
// without a time limit: the pod traces these lists come with record none.
// The scheduler's parameters (weights, latency, backfill) stay base's.
func WithNodeList(base Config, nodes []traces.Node) (Config, error) {
	if len(nodes) == 0 {
		return Config{}, fmt.Errorf("%w: the node list has no nodes", ErrConfig)
	}
	c := base
	c.Nodes = make([]NodeConfig, len(nodes))
	seen := make(map[string]bool, len(nodes))
	for i, n := range nodes {
		if n.Name == "" || seen[n.Name] {
			return Config{}, fmt.Errorf("%w: node list: node %d: empty or repeated name %q", ErrConfig, i+1, n.Name)
		}
		seen[n.Name] = true
		c.Nodes[i] = NodeConfig{Name: n.Name, CPUs: max(1, (n.CPUMilli+999)/1000), GPUs: n.GPUs, GPUType: n.Model}
	}
	c.Partitions = []PartitionConfig{{Name: "all", Default: true}}
	return c, nil
}

// readNodeList reads the node list at path over base (WithNodeList).
func readNodeList(path string, base Config) (Config, error) {
	nodes, err := traces.ReadNodes(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: node list: %w", ErrConfig, err)
	}
	c, err := WithNodeList(base, nodes)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
