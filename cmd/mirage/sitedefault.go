package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/slurm"
)

// The site default: a chain submitted without --policy on Slurm takes the
// policy the site grid's ranking gives the class of the site's scheduler
// settings (models.DefaultPolicyForSite). The settings are read as mirage
// site reads them and kept in the state directory (siteCacheName, 0600),
// read again at most once a day; the daemon chooses again for such chains
// when the choice changes (the site's settings, or the models trained).

const (
	siteCacheName   = "site.yaml"    // the site's settings, as mirage site --out writes them
	siteCacheMaxAge = 24 * time.Hour // read from the cluster again after this long
)

// siteSource finds the class of the site behind a Slurm backend.
type siteSource struct {
	f   *Factory
	dir string // state directory
}

// siteReader is a backend that reads its site's settings (the Slurm
// client, and its team-rules wrapper).
type siteReader interface {
	Site(ctx context.Context, user string) (*slurm.Site, error)
}

// class is the site's class and why (sim.Classify), from the cached
// settings when they are less than a day old, else read from the cluster
// and cached. A backend that cannot read its settings has no class ("").
// warn says why the settings could not be read; the class is then ""
// (unknown).
func (s siteSource) class(ctx context.Context, cl provisioner.Cluster) (class sim.SiteClass, why string, warn error) {
	sr, ok := cl.(siteReader)
	if !ok {
		return "", "", nil
	}
	path := filepath.Join(s.dir, siteCacheName)
	if err := state.CheckPrivateFile(path); err != nil {
		return "", "", err // never read settings someone else may have written
	}
	if st, err := os.Stat(path); err == nil && s.f.Now().Sub(st.ModTime()) < siteCacheMaxAge {
		c, err := sim.LoadPresetFile(path)
		if err == nil {
			class, why = sim.Classify(c)
			return class, why, nil
		}
		warn = fmt.Errorf("the cached site settings %s: %w (read again)", path, err)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		warn = fmt.Errorf("the cached site settings: %w", err)
	}
	v, err := readSite(ctx, sr.Site, "", 0)
	if err != nil {
		return "", "", errors.Join(warn, fmt.Errorf("the site's settings could not be read (%w); mirage site shows them", err))
	}
	if err := sim.WritePresetFileMode(path, 0o600, v.Preset); err != nil {
		warn = errors.Join(warn, fmt.Errorf("cache the site's settings: %w", err))
	}
	return v.Class, v.ClassWhy, warn
}

// siteChoice is what the site default needs, read once per command or
// daemon cycle: what the backend does by itself, the site's class and the
// compiled-in ranking.
type siteChoice struct {
	caps     provisioner.Capabilities
	class    sim.SiteClass
	classWhy string
	ranking  *models.SiteRanking
}

// choice reads the site's class (on a backend that can lift node lists,
// caps.Unpins: the others do not pin) and the ranking; warn says what
// could not be read.
func (s siteSource) choice(ctx context.Context, cl provisioner.Cluster, caps provisioner.Capabilities) (siteChoice, error) {
	c := siteChoice{caps: caps}
	var warn error
	if caps.Unpins {
		c.class, c.classWhy, warn = s.class(ctx, cl)
	}
	ranking, err := s.f.SiteRanking()
	if err != nil {
		warn = errors.Join(warn, err)
	}
	c.ranking = ranking
	return c, warn
}

// pick chooses the policy of a chain of workload submitted without one
// (models.DefaultPolicyForSite); why says which and why in words.
func (c siteChoice) pick(policies provisioner.PolicyFactory, workload string) (name, why string, warn error) {
	name, why, warn = models.DefaultPolicyForSite(c.caps, policies, workload, string(c.class), c.ranking)
	if c.classWhy != "" {
		why = fmt.Sprintf("%s (%s)", why, c.classWhy)
	}
	return name, "default: " + why, warn
}

// rechooseSiteDefaults chooses again the policy of every active chain
// whose policy was the site's default, and records a change in the chain
// and its event log (caps: what the backend does by itself).
func rechooseSiteDefaults(ctx context.Context, st provisioner.Store, src siteSource, cl provisioner.Cluster, caps provisioner.Capabilities, pol policyOptions) error {
	chains, err := st.Chains(ctx, true)
	if err != nil || !slices.ContainsFunc(chains, func(c provisioner.Chain) bool { return c.PolicyWhy != "" }) {
		return err
	}
	choice, warn := src.choice(ctx, cl, caps)
	if warn != nil {
		fmt.Fprintf(src.f.ErrOut, "mirage: %v\n", warn)
	}
	byDir := map[string]provisioner.PolicyFactory{} // one registry per models directory for the call
	for i := range chains {
		ch := &chains[i]
		if ch.PolicyWhy == "" {
			continue
		}
		dir := cmp.Or(ch.Models, pol.dir(src.f))
		policies, ok := byDir[dir]
		if !ok {
			policies = src.f.Policies(dir)
			byDir[dir] = policies
		}
		name, why, _ := choice.pick(policies, ch.Workload) // (why a trained model cannot be used is said by the cycle's fallback)
		if name == ch.Policy && why == ch.PolicyWhy {
			continue
		}
		old := ch.Policy
		ch.Policy, ch.PolicyWhy = name, why
		if models.ParseRef(name).UsesModel() && ch.Models == "" {
			if ch.Models, err = filepath.Abs(pol.dir(src.f)); err != nil {
				return err
			}
		}
		if err := st.PutChain(ctx, ch); err != nil {
			return err
		}
		if es, ok := st.(provisioner.EventStore); ok && old != name {
			if err := es.AddEvent(ctx, &provisioner.Event{Time: src.f.Now(), ChainID: ch.ID, Segment: -1, Kind: provisioner.EventPolicy,
				Detail: fmt.Sprintf("policy %s → %s (%s)", old, name, why)}); err != nil {
				return err
			}
		}
	}
	return nil
}
