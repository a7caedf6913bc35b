package slurm

import (
	"fmt"
	"os"
	"time"
)

// Options name a Slurm cluster the way mirage's command line does: its
// slurm.conf, the directory of its commands and a timeout. Open turns them
// into a Client, so every command builds its client the same way.
type Options struct {
	SlurmConf     string                  // slurm.conf ("" = inherit SLURM_CONF, else Slurm's default)
	Bin           string                  // directory holding sbatch, squeue, sacct, …, searched before PATH ("" = PATH only)
	Timeout       time.Duration           // per command (0 = the Client's default)
	DieWithParent bool                    // kill the commands when mirage dies (the chain commands)
	Getenv        func(key string) string // the environment, for PATH (nil = os.Getenv)
	ScriptDir     string                  // Config.ScriptDir: the only directory batch scripts are submitted from ("" = any)
	View          string                  // how every user's jobs are read: ViewAuto (""), ViewCompact or ViewJSON
	ViewMemo      string                  // Config.ViewMemo: where ViewAuto remembers a switch to the compact layout ("" = nowhere)
}

// The views of Options.View: how the Client reads every user's jobs.
const (
	// ViewAuto reads --json where the release's is usable, and switches a
	// command to the compact text layout for good once its answer is over
	// Config.JSONBudget (a big cluster).
	ViewAuto = "auto"
	// ViewCompact reads the compact text layout from the start (TextOnly,
	// sacct text): a few hundred bytes a job where 24.11's JSON takes 10 KB.
	ViewCompact = "compact"
	// ViewJSON reads --json whatever its size, up to Config.MaxOutput.
	ViewJSON = "json"
)

// viewConfig sets cfg for view.
func viewConfig(cfg *Config, view string) error {
	switch view {
	case "", ViewAuto:
	case ViewCompact:
		cfg.TextOnly, cfg.SacctFormat = true, FormatText
	case ViewJSON:
		cfg.JSONBudget = -1
	default:
		return fmt.Errorf("slurm: view %q: want %s, %s or %s", view, ViewAuto, ViewCompact, ViewJSON)
	}
	return nil
}

// Open builds a Client from o: text times in UTC, the commands run by an
// ExecRunner with the same slurm.conf and PATH. It runs nothing.
func Open(o Options) (*Client, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path := ""
	if o.Bin != "" {
		path = o.Bin + string(os.PathListSeparator) + getenv("PATH")
	}
	const tz = "UTC"
	cfg := Config{SlurmConf: o.SlurmConf, Path: path, Timeout: o.Timeout, TZ: tz, ScriptDir: o.ScriptDir, ViewMemo: o.ViewMemo,
		Runner: &ExecRunner{SlurmConf: o.SlurmConf, Path: path, TZ: tz, DieWithParent: o.DieWithParent}}
	if err := viewConfig(&cfg, o.View); err != nil {
		return nil, err
	}
	return New(cfg)
}
