package slurm

import (
	"context"
	"strings"
)

// ControllerConfig reads the controller's settings (`scontrol show config`, read by
// ParseConfig).
func (c *Client) ControllerConfig(ctx context.Context) (map[string]string, error) {
	out, err := c.run(ctx, "scontrol", []string{"show", "config"}, runOpts{})
	if err != nil {
		return nil, err
	}
	return ParseConfig(out)
}

// KeepsComments reports whether the accounting keeps job comments
// (AccountingStoreFlags holds job_comment), from `scontrol show config`:
// without it sacct's Comment is empty, so mirage recover can rebuild a
// chain only from a job that is still in squeue.
func (c *Client) KeepsComments(ctx context.Context) (bool, error) {
	cfg, err := c.ControllerConfig(ctx)
	if err != nil {
		return false, err
	}
	return storesComments(cfg), nil
}

// storesComments reads AccountingStoreFlags ("job_comment,job_env"; ""
// when unset).
func storesComments(cfg map[string]string) bool {
	for _, f := range strings.Split(cfg["AccountingStoreFlags"], ",") {
		if strings.EqualFold(strings.TrimSpace(f), "job_comment") {
			return true
		}
	}
	return false
}
