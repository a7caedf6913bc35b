package slurm

import (
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
	return New(Config{SlurmConf: o.SlurmConf, Path: path, Timeout: o.Timeout, TZ: tz, ScriptDir: o.ScriptDir,
		Runner: &ExecRunner{SlurmConf: o.SlurmConf, Path: path, TZ: tz, DieWithParent: o.DieWithParent}})
}
