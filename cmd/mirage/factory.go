package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/mirage-gpu/mirage/internal/term"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
)

// Factory is everything the commands take from the outside world, as
// functions and streams, built once in main and passed to every command
// constructor. Tests build their own (test streams, a logical clock, a
// simulated or fake backend), so they never share state and run in parallel.
type Factory struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// IsTerminal reports whether a stream (In, Out, ErrOut) is a terminal:
	// progress bars are drawn on ErrOut only then, and questions are asked
	// on In only then.
	IsTerminal func(stream any) bool

	Now    func() time.Time                                 // decision time
	Seed   func() uint64                                    // seed of chain ids
	Getenv func(key string) string                          // the environment
	Sleep  func(ctx context.Context, d time.Duration) error // waiting (handoff, daemon interval)

	// Backend builds the cluster of the chain commands from their flags.
	Backend func(o *backendOptions) (provisioner.Cluster, error)
	// Policies resolves chains' submission policies by name: the baselines,
	// and the learned ones from the models directory given.
	Policies func(modelsDir string) provisioner.PolicyFactory
	// LiveCluster connects predict-wait to the live cluster: its view
	// (squeue, sinfo) and its history (sacct).
	LiveCluster func(ctx context.Context, o *predictWaitOptions) (provisioner.Cluster, provisioner.HistorySource, error)
	// Site reads a live Slurm cluster's scheduler settings for user ("":
	// the current user): mirage site, and the site default of submit and
	// the daemon.
	Site func(ctx context.Context, o slurm.Options, user string) (*slurm.Site, error)
	// SiteRanking is the ranking of the site default's candidates per
	// site class (models.LoadSiteRanking: the one compiled in).
	SiteRanking func() (*models.SiteRanking, error)
}

// newFactory is the real world: the process's streams, environment and
// clock, and the Slurm or Kubernetes backends.
func newFactory() *Factory {
	f := &Factory{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, IsTerminal: term.IsTerminal,
		Now:    func() time.Time { return time.Now().UTC() },
		Seed:   randomSeed,
		Getenv: os.Getenv,
		Sleep:  sleepContext,
		Policies: func(dir string) provisioner.PolicyFactory {
			return models.PolicyFactory(dir, models.PolicyOptions{})
		},
		SiteRanking: models.LoadSiteRanking,
	}
	f.Backend = func(o *backendOptions) (provisioner.Cluster, error) {
		cl, err := openBackend(o, f.Getenv)
		return cl, stateErr(err)
	}
	f.LiveCluster = func(_ context.Context, o *predictWaitOptions) (provisioner.Cluster, provisioner.HistorySource, error) {
		c, err := slurm.Open(slurm.Options{SlurmConf: o.slurmConf, Bin: o.slurmBin, Timeout: o.slurmTimeout, Getenv: f.Getenv})
		if err != nil {
			return nil, nil, err
		}
		return c, c, nil
	}
	f.Site = func(ctx context.Context, o slurm.Options, user string) (*slurm.Site, error) {
		o, err := o.Resolve() // a missing --slurm-conf or --slurm-bin is a usage error
		if err != nil {
			return nil, err
		}
		c, err := slurm.Open(o)
		if err != nil {
			return nil, err
		}
		if err := c.Ping(ctx); err != nil { // seconds, not Slurm's own minutes of retries
			return nil, err
		}
		return c.Site(ctx, user)
	}
	return f
}

// progress is where progress bars are drawn: ErrOut on a terminal, else
// nowhere (nil).
func (f *Factory) progress() io.Writer {
	if f.IsTerminal != nil && f.IsTerminal(f.ErrOut) {
		return f.ErrOut
	}
	return nil
}
