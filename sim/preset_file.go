package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mirage-gpu/mirage/internal/safefile"
)

// PresetFile is a calibrated preset as `mirage sim calibrate` writes it: a
// named preset and the parameters that replace its values, with where they
// came from; or one written by hand, which may also set site settings
// (SiteParams). Every command that takes --preset takes such a file's path.
type PresetFile struct {
	Base      string `yaml:"base"`                 // the named preset it starts from (ls6, default)
	SlurmConf string `yaml:"slurm_conf,omitempty"` // a slurm.conf read over the base, as --slurm-conf
	NodeList  string `yaml:"node_list,omitempty"`  // a node list replacing the nodes, as --node-list
	Params    `yaml:",inline"`
	Site      SiteParams `yaml:",inline"`
	// LatencyTable is the empirical latency (Config.LatencyTable), with
	// empirical_latency set.
	LatencyTable []time.Duration `yaml:"latency_table,omitempty"`
	// Provenance, for people; not read back.
	Trace     string  `yaml:"trace,omitempty"`
	Fit       string  `yaml:"fit,omitempty"`   // the span the parameters were fitted on
	Score     string  `yaml:"score,omitempty"` // the span they were scored on
	Objective float64 `yaml:"objective,omitempty"`
}

// SiteParams are site settings a preset file may set over its base and
// slurm_conf, each optional (absent: theirs), under the names of Config's
// fields (which name the Slurm setting and its default).
type SiteParams struct {
	PriorityType    string         `yaml:"priority_type,omitempty"`          // priority/basic or priority/multifactor
	AccrueAlways    *bool          `yaml:"priority_accrue_always,omitempty"` // PriorityFlags=ACCRUE_ALWAYS
	MaxJobsAccrue   *int           `yaml:"max_jobs_accrue,omitempty"`        // MaxJobsAccrue per user (sacctmgr; 0: no limit)
	BFWindow        *time.Duration `yaml:"bf_window,omitempty"`
	BFMaxJobUser    *int           `yaml:"bf_max_job_user,omitempty"`
	BFMinAgeReserve *time.Duration `yaml:"bf_min_age_reserve,omitempty"`
}

// Apply returns c with the settings p sets.
func (p SiteParams) Apply(c Config) (Config, error) {
	switch p.PriorityType {
	case "":
	case PriorityBasic, PriorityMultifactor:
		c.PriorityType = p.PriorityType
	default:
		return c, fmt.Errorf("%w: priority_type %q: want %s or %s", ErrConfig, p.PriorityType, PriorityBasic, PriorityMultifactor)
	}
	set := func(dst *int, v *int, name string) error {
		if v != nil {
			if *v < 0 {
				return fmt.Errorf("%w: %s %d: want ≥ 0", ErrConfig, name, *v)
			}
			*dst = *v
		}
		return nil
	}
	if err := errors.Join(set(&c.MaxJobsAccrue, p.MaxJobsAccrue, "max_jobs_accrue"), set(&c.BFMaxJobUser, p.BFMaxJobUser, "bf_max_job_user")); err != nil {
		return c, err
	}
	if p.AccrueAlways != nil {
		c.PriorityAccrueAlways = *p.AccrueAlways
	}
	if p.BFWindow != nil {
		if *p.BFWindow < time.Minute {
			return c, fmt.Errorf("%w: bf_window %s: want at least 1m (slurm.conf(5): Min 1 minute)", ErrConfig, *p.BFWindow)
		}
		c.BFWindow = *p.BFWindow
	}
	if p.BFMinAgeReserve != nil {
		if *p.BFMinAgeReserve < 0 {
			return c, fmt.Errorf("%w: bf_min_age_reserve %s: want ≥ 0", ErrConfig, *p.BFMinAgeReserve)
		}
		c.BFMinAgeReserve = *p.BFMinAgeReserve
	}
	return c, nil
}

// isPresetPath reports whether a --preset value names a file rather than a
// built-in preset.
func isPresetPath(name string) bool {
	return strings.ContainsAny(name, `/\`) || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// LoadPresetFile reads a preset file and builds its configuration.
func LoadPresetFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: preset file: %v", ErrConfig, err)
	}
	var pf PresetFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil && err != io.EOF {
		return Config{}, fmt.Errorf("%w: preset file %s: %v", ErrConfig, path, err)
	}
	if pf.Base == "" || isPresetPath(pf.Base) {
		return Config{}, fmt.Errorf("%w: preset file %s: base %q: want a named preset (ls6 or default)", ErrConfig, path, pf.Base)
	}
	base, err := Preset(pf.Base)
	if err != nil {
		return Config{}, fmt.Errorf("preset file %s: %w", path, err)
	}
	if pf.SlurmConf != "" {
		fh, err := os.Open(pf.SlurmConf)
		if err != nil {
			return Config{}, fmt.Errorf("%w: preset file %s: %v", ErrConfig, path, err)
		}
		defer fh.Close()
		if base, err = ParseSlurmConf(fh, base); err != nil {
			return Config{}, fmt.Errorf("preset file %s: slurm_conf: %w", path, err)
		}
	}
	if pf.NodeList != "" {
		if base, err = readNodeList(pf.NodeList, base); err != nil {
			return Config{}, fmt.Errorf("preset file %s: node_list: %w", path, err)
		}
	}
	if len(pf.LatencyTable) > 0 {
		base.LatencyTable = pf.LatencyTable
	}
	c, err := pf.Params.Apply(base)
	if err == nil {
		c, err = pf.Site.Apply(c)
	}
	if err != nil {
		return Config{}, fmt.Errorf("preset file %s: %w", path, err)
	}
	return c, nil
}

// WritePresetFile writes pf to path (atomically; 0644: a preset is no secret).
func WritePresetFile(path string, pf PresetFile) error {
	return safefile.WriteFile(path, 0o644, func(w io.Writer) error {
		fmt.Fprintf(w, "# mirage simulator preset, written by `mirage sim calibrate` on %s.\n", time.Now().UTC().Format(time.RFC3339))
		fmt.Fprintln(w, "# Use it with --preset FILE (mirage sim, train, eval, predict-wait).")
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(pf); err != nil {
			return err
		}
		return enc.Close()
	})
}

// WriteText prints the calibration: the parameters before and after, and
// the fidelity of both on the fit span and on the scored span.
func (c *Calibration) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d candidates × %d replicas; %d jobs compared in the fit span %s, %d in the scored span %s; excluded (holds): %v\n",
		c.Replays, c.Replicas, c.Compared, spanString(c.Fit), c.Scored, spanString(c.Score), c.Excluded)
	fmt.Fprintf(w, "base:       %s  objective %.3f\n", c.Base.Params, c.Base.Objective)
	fmt.Fprintf(w, "calibrated: %s  objective %.3f\n", c.Best.Params, c.Best.Objective)
	for _, part := range []struct {
		name       string
		base, best []Stats
	}{{"fit span", c.Base.Fit, c.Best.Fit}, {"scored span (not fitted on)", c.Base.Score, c.Best.Score}} {
		if len(part.best) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: base → calibrated\n", part.name)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "group\tjobs\tKS\tpearson\tspearman\tmedian|err|\tp90|err|\t")
		for i, s := range part.best {
			b := part.base[i]
			fmt.Fprintf(tw, "%s\t%d\t%.3f → %.3f\t%.2f → %.2f\t%.2f → %.2f\t%s → %s\t%s → %s\t\n", s.Group, s.Jobs/max(c.Replicas, 1), b.KS, s.KS, b.Pearson, s.Pearson,
				b.Spearman, s.Spearman, dur(b.MedianAbsErr), dur(s.MedianAbsErr), dur(b.P90AbsErr), dur(s.P90AbsErr))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// String renders the parameters on one line.
func (p Params) String() string {
	lat := "sched latency " + p.SchedLatency.String()
	if p.EmpiricalLatency {
		lat = "empirical latency"
	}
	return fmt.Sprintf("nodes %d, weights age %g size %g fair-share %g recorded %g, max age %s, %s, bf_interval %s",
		p.Nodes, p.AgeWeight, p.SizeWeight, p.FairshareWeight, p.RecordedWeight, p.MaxAge, lat, p.BFInterval)
}

// CalibratedPreset is the preset file of a calibration that searched from
// the options' preset (a name or a preset file), slurm.conf and node list on
// trace: the named preset, slurm.conf and node list (absolute paths) at its
// root, the best parameters, provenance.
func CalibratedPreset(o Options, trace string, cal *Calibration) (PresetFile, error) {
	pf, err := presetOrigin(o.Preset)
	if err != nil {
		return PresetFile{}, err
	}
	for _, f := range []struct{ given, dst *string }{{&o.SlurmConf, &pf.SlurmConf}, {&o.NodeList, &pf.NodeList}} {
		if *f.given != "" {
			*f.dst = *f.given
		}
		if *f.dst != "" {
			if *f.dst, err = filepath.Abs(*f.dst); err != nil {
				return PresetFile{}, err
			}
		}
	}
	pf.Params, pf.Trace, pf.Objective, pf.Fit, pf.Score = cal.Best.Params, trace, cal.Best.Objective, cal.Fit.String(), cal.Score.String()
	if cal.Best.Params.EmpiricalLatency {
		pf.LatencyTable = cal.LatencyTable
	}
	return pf, nil
}

// presetOrigin is what a preset file calibrated from preset (a name or a
// file) starts from: the named preset, with the file's slurm.conf and node
// list when it is a file.
func presetOrigin(preset string) (PresetFile, error) {
	if !isPresetPath(preset) {
		return PresetFile{Base: preset}, nil
	}
	b, err := os.ReadFile(preset)
	if err != nil {
		return PresetFile{}, fmt.Errorf("%w: preset file: %v", ErrConfig, err)
	}
	var pf PresetFile
	if err := yaml.Unmarshal(b, &pf); err != nil {
		return PresetFile{}, fmt.Errorf("%w: preset file %s: %v", ErrConfig, preset, err)
	}
	return PresetFile{Base: pf.Base, SlurmConf: pf.SlurmConf, NodeList: pf.NodeList, Site: pf.Site}, nil
}
