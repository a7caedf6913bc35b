package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/sim"
	"github.com/mirage-gpu/mirage/slurm"
)

// siteOptions are the flags of mirage site.
type siteOptions struct {
	f     *Factory
	slurm slurm.Options
	user  string
	out   string
	limit time.Duration
	json  bool
}

func newSiteCmd(f *Factory, runF func(*siteOptions) error) *cobra.Command {
	o := &siteOptions{f: f}
	cmd := &cobra.Command{
		Use:   "site [--out SITE.yaml] [--json]",
		Short: "Read the cluster's scheduler settings and say what they mean for chains",
		Long: `Read the live cluster's settings that decide where a pending job stands and
whether it holds nodes ahead of its start (scontrol show config and show
partition, sinfo, and from slurmdbd the QOS and your associations' accrual
limits), and say what each means for a chain whose successor is queued before
its predecessor ends. The kind of site they make (its class) names the cell of
the evaluation's site grid the default policy is ranked by.

--out writes them as a simulator preset file that every --preset takes
(mirage sim, train, eval, predict-wait): the site's nodes, partitions and
priority settings as slurm.conf lines, and your accrual limit. Settings and
classes: docs/guide/slurm.md.`,
		Example: `  mirage site
  mirage site --out site.yaml      # then: mirage eval walk-forward --preset ./site.yaml ...
  mirage site --user alice --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return siteRun(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.out, "out", "", "write the settings as a preset file here (YAML)")
	fl.StringVar(&o.user, "user", "", "whose associations and accrual limits to read (default: you)")
	fl.DurationVar(&o.limit, "limit", 0, "a segment's time limit, the head start the words consider (default: the longest partition limit)")
	fl.BoolVar(&o.json, "json", false, "print as JSON")
	fl.StringVar(&o.slurm.SlurmConf, "slurm-conf", "", "slurm.conf of the cluster (default: $SLURM_CONF, else Slurm's own default)")
	fl.StringVar(&o.slurm.Bin, "slurm-bin", "", "directory holding scontrol, sinfo, sacctmgr (default: search PATH)")
	fl.DurationVar(&o.slurm.Timeout, "slurm-timeout", 30*time.Second, "timeout of each Slurm command")
	return cmd
}

func siteRun(ctx context.Context, o *siteOptions) error {
	o.slurm.Getenv = o.f.Getenv
	read := func(ctx context.Context, user string) (*slurm.Site, error) { return o.f.Site(ctx, o.slurm, user) }
	v, err := readSite(ctx, read, o.user, o.limit)
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := sim.WritePresetFile(o.out, v.Preset); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if err := cmdutil.PrintView(o.f.Out, o.json, v, v); err != nil {
		return err
	}
	if o.out != "" && !o.json {
		_, err = fmt.Fprintf(o.f.Out, "\nwrote %s (use it with --preset %s)\n", o.out, o.out)
	}
	return err
}

// siteView is what mirage site read and what it means.
type siteView struct {
	Cluster  string         `json:"cluster"`
	Version  string         `json:"slurm_version"`
	User     string         `json:"user"`
	Class    sim.SiteClass  `json:"class"`
	ClassWhy string         `json:"class_reason"`
	Findings []sim.Finding  `json:"findings"`
	Preset   sim.PresetFile `json:"preset"`
	Site     *slurm.Site    `json:"read"`
	config   sim.Config
}

// readSite reads the live site (read: Factory.Site, or a Slurm backend's
// Site) and renders it: the preset
// file, its configuration (built by the simulator's own preset code, so
// that the file reproduces what was read), the class and the words.
func readSite(ctx context.Context, read func(ctx context.Context, user string) (*slurm.Site, error), user string, window time.Duration) (*siteView, error) {
	s, err := read(ctx, user)
	if err != nil {
		return nil, stateErr(err)
	}
	conf, err := s.SlurmConf()
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	pf := sim.PresetFile{Base: "default", SlurmConfText: string(conf),
		WrittenBy: fmt.Sprintf("mirage site (cluster %s, Slurm %s, user %s)", s.Cluster, s.Version, s.User)}
	limit, from := s.AccrueLimit()
	if limit > 0 {
		pf.Site.MaxJobsAccrue = &limit
	}
	c, err := pf.Build("read from cluster " + s.Cluster)
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("the settings read do not make a simulator preset: %w", err))
	}
	facts := sim.SiteFacts{AccountingErr: s.AccountingErr, AccrueFrom: from, GrpJobsAccrue: map[string]int{}}
	for _, a := range s.Associations {
		if a.User == "" && a.GrpJobsAccrue > 0 {
			facts.GrpJobsAccrue[a.Account] = a.GrpJobsAccrue
		}
		if !s.EnforcesLimits() && a.User == s.User && a.MaxJobsAccrue > 0 {
			facts.LimitsNotEnforced = true
		}
	}
	for _, q := range s.QOS {
		if slices.ContainsFunc(q.Flags, func(fl string) bool { return strings.EqualFold(fl, "NoReserve") }) {
			facts.NoReserve = append(facts.NoReserve, q.Name)
		}
	}
	class, why := sim.Classify(c)
	return &siteView{Cluster: s.Cluster, Version: s.Version, User: s.User, Class: class, ClassWhy: why,
		Findings: sim.Explain(c, window, facts), Preset: pf, Site: s, config: c}, nil
}

// WriteText prints the settings and their meaning.
func (v *siteView) WriteText(w io.Writer) error {
	c := v.config
	gpus := 0
	for _, n := range c.Nodes {
		gpus += n.GPUs
	}
	fmt.Fprintf(w, "cluster %s (Slurm %s), as user %s: %d nodes, %d GPUs, %d partitions\n\nsettings read:\n", v.Cluster, v.Version, v.User, len(c.Nodes), gpus, len(c.Partitions))
	for _, l := range strings.Split(strings.TrimSpace(v.Preset.SlurmConfText), "\n") {
		if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "NodeName=") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if v.Site.AccountingErr != "" {
		fmt.Fprintf(w, "  accrual limits: not read (%s)\n", v.Site.AccountingErr)
	} else {
		fmt.Fprintf(w, "  MaxJobsAccrue for %s: %s\n", v.User, orNoLimit(c.MaxJobsAccrue))
	}
	fmt.Fprintf(w, "\nclass: %s (%s)\n\nwhat the settings mean for a chain whose successor is queued before its predecessor ends:\n", v.Class, v.ClassWhy)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range v.Findings {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Setting, f.Value, f.Meaning)
	}
	return tw.Flush()
}

// orNoLimit prints a limit, 0 as "no limit".
func orNoLimit(n int) string {
	if n == 0 {
		return "no limit"
	}
	return fmt.Sprint(n)
}
