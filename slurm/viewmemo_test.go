package slurm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A switch to the compact view is remembered in the state directory: the
// processes that follow within ViewMemoTTL do not ask --json again; after
// it one does. A memo that does not read is logged and ignored, and the
// next switch writes it anew.
func TestViewMemo(t *testing.T) {
	jsonDoc := reply{out: readTestdata(t, "squeue-24.11.json")}
	txt := reply{out: readTestdata(t, "squeue-24.11.txt")}
	memo := filepath.Join(t.TempDir(), ViewMemoName)
	start := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	// run is one process: a client with the memo, at now, reading the
	// queue once; it returns whether it asked --json and what it logged.
	run := func(t *testing.T, now time.Time) (askedJSON bool, logs string) {
		t.Helper()
		r := &fakeRunner{replies: map[string][]reply{"squeue": {jsonDoc, txt}}}
		var lb strings.Builder
		c, _ := newTestClient(t, r, func(c *Config) {
			c.Runner, c.JSONBudget, c.ViewMemo = budgetRunner{r}, int64(len(jsonDoc.out)-1), memo
			c.Logger = slog.New(slog.NewTextHandler(&lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c.Clock = &fakeClock{now: now}
		})
		if _, err := c.Jobs(context.Background(), JobFilter{}); err != nil {
			t.Fatal(err)
		}
		for _, cl := range r.calls {
			askedJSON = askedJSON || slices.Contains(cl.args, "--json")
		}
		return askedJSON, lb.String()
	}

	if asked, _ := run(t, start); !asked {
		t.Fatal("first process: --json not asked")
	}
	fi, err := os.Stat(memo)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("memo after the switch: %v, %v (want a 0600 file)", fi, err)
	}
	b, _ := os.ReadFile(memo)
	if !strings.Contains(string(b), `"squeue":"2026-11-23T06:00:00Z"`) {
		t.Errorf("memo %s, want squeue switched at the first process's time", b)
	}
	if asked, logs := run(t, start.Add(ViewMemoTTL-time.Minute)); asked || !strings.Contains(logs, "compact text layout") {
		t.Errorf("within a day: --json asked %v, log %q; want the compact view from the start, said", asked, logs)
	}
	if asked, _ := run(t, start.Add(ViewMemoTTL)); !asked {
		t.Error("a day later: --json not asked again")
	}
	// The third process switched again: the memo holds its time.
	if b, _ := os.ReadFile(memo); !strings.Contains(string(b), `"squeue":"2026-11-24T06:00:00Z"`) {
		t.Errorf("memo %s after the second switch", b)
	}

	if err := os.WriteFile(memo, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	asked, logs := run(t, start.Add(ViewMemoTTL+time.Hour))
	if !asked || !strings.Contains(logs, "view memo ignored") {
		t.Errorf("corrupt memo: --json asked %v, log %q; want it tried and the memo said ignored", asked, logs)
	}
	if asked, _ := run(t, start.Add(ViewMemoTTL+2*time.Hour)); asked {
		t.Error("after the corrupt memo was rewritten: --json asked again")
	}
}
