package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
)

// ViewMemoName is the file, in mirage's state directory, where the Client
// remembers which commands' --json answers passed the budget
// (Config.ViewMemo).
const ViewMemoName = "slurm-view.json"

// ViewMemoTTL is how long a command whose --json answer passed the budget
// is read in the compact layout from the start by later processes: a
// cron-run daemon would otherwise read 32 MiB of JSON at every cycle to
// learn it again (about 0.4 s of CPU and 64 MB at 100,000 queued jobs,
// docs/results/daemon-scale.md). After it, one process tries JSON again,
// so a cluster that shrank goes back to the richer reads.
const ViewMemoTTL = 24 * time.Hour

// viewMemoLimit bounds the memo file read (it holds two timestamps).
const viewMemoLimit = 4 << 10

// viewMemo is the memo's content: command → when its answer passed the
// budget.
type viewMemo map[string]time.Time

// readViewMemo reads the memo at path; a missing file is an empty memo.
func readViewMemo(path string) (viewMemo, error) {
	b, err := safefile.ReadPrivate(path, viewMemoLimit, "remove it: it is a cache and is written again")
	if errors.Is(err, fs.ErrNotExist) {
		return viewMemo{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := viewMemo{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w (remove it: it is a cache and is written again)", path, err)
	}
	return m, nil
}

// loadViewMemo starts the commands the memo names, within ViewMemoTTL,
// in the compact layout. The memo is a cache: one that does not read is
// logged and ignored.
func (c *Client) loadViewMemo() {
	if c.cfg.ViewMemo == "" || c.cfg.TextOnly || c.cfg.JSONBudget < 0 {
		return
	}
	m, err := readViewMemo(c.cfg.ViewMemo)
	if err != nil {
		c.log.Warn("slurm: view memo ignored", "err", err)
		return
	}
	now := c.clock.Now()
	for cmd, at := range m {
		if cmd != "squeue" && cmd != "sacct" {
			continue
		}
		if age := now.Sub(at); age >= 0 && age < ViewMemoTTL {
			c.noJSON[cmd] = true
			c.log.Debug("slurm: reading the compact text layout, as a recent answer passed the JSON budget", "cmd", cmd, "since", at, "memo", c.cfg.ViewMemo)
		}
	}
}

// rememberCompact records in the memo that cmd's answer passed the budget
// now; a failure to write it is logged (the next process tries JSON once
// more).
func (c *Client) rememberCompact(cmd string) {
	if c.cfg.ViewMemo == "" {
		return
	}
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	m, err := readViewMemo(c.cfg.ViewMemo)
	if err != nil {
		m = viewMemo{} // rewritten whole
	}
	m[cmd] = c.clock.Now().UTC().Truncate(time.Second)
	err = safefile.WriteFile(c.cfg.ViewMemo, 0o600, func(w io.Writer) error {
		return json.NewEncoder(w).Encode(m)
	})
	if err != nil {
		c.log.Warn("slurm: could not remember the compact view", "memo", c.cfg.ViewMemo, "err", err)
	}
}
