package slurm

import (
	"bufio"
	"bytes"
	"context"
	"strings"
)

// ParseConfigText reads `scontrol show config`: one "Key = Value" line per
// parameter (the header line, blank lines and the sections' other lines
// are skipped). Values are trimmed; a key seen twice keeps its first value
// (the controller's configuration comes before the plugins' sections).
func ParseConfigText(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		if _, seen := out[k]; !seen {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// KeepsComments reports whether the accounting keeps job comments
// (AccountingStoreFlags holds job_comment), from `scontrol show config`:
// without it sacct's Comment is empty, so mirage recover can rebuild a
// chain only from a job that is still in squeue.
func (c *Client) KeepsComments(ctx context.Context) (bool, error) {
	out, err := c.run(ctx, "scontrol", []string{"show", "config"}, runOpts{})
	if err != nil {
		return false, err
	}
	return storesComments(ParseConfigText(out)), nil
}

// storesComments reads AccountingStoreFlags ("job_comment,job_env", or
// "(null)" when unset).
func storesComments(cfg map[string]string) bool {
	for _, f := range strings.Split(cfg["AccountingStoreFlags"], ",") {
		if strings.EqualFold(strings.TrimSpace(f), "job_comment") {
			return true
		}
	}
	return false
}
