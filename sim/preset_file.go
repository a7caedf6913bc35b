package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	Base      string `json:"base,omitempty" yaml:"base"`                       // the named preset it starts from (ls6, default)
	SlurmConf string `json:"slurm_conf,omitempty" yaml:"slurm_conf,omitempty"` // a slurm.conf read over the base, as --slurm-conf
	// SlurmConfText is slurm.conf lines read over the base (after
	// slurm_conf) as ParseSlurmConf reads a file: what `mirage site` read
	// from a live cluster, so that the file stands alone.
	SlurmConfText string `json:"slurm_conf_text,omitempty" yaml:"slurm_conf_text,omitempty"`
	NodeList      string `json:"node_list,omitempty" yaml:"node_list,omitempty"` // a node list replacing the nodes, as --node-list
	// Params are the calibrated parameters; they apply when nodes is set
	// (a calibration sets them all), else the base's and slurm.conf's
	// values stand and no other of them may be set.
	Params `yaml:",inline"`
	Site   SiteParams `json:"site" yaml:",inline"`
	// LatencyTable is the empirical latency (Config.LatencyTable), with
	// empirical_latency set.
	LatencyTable []time.Duration `json:"latency_table,omitempty" yaml:"latency_table,omitempty"`
	// Provenance, for people; not read back.
	Trace     string  `json:"trace,omitempty" yaml:"trace,omitempty"`
	Fit       string  `json:"fit,omitempty" yaml:"fit,omitempty"`     // the span the parameters were fitted on
	Score     string  `json:"score,omitempty" yaml:"score,omitempty"` // the span they were scored on
	Objective float64 `json:"objective,omitempty" yaml:"objective,omitempty"`
	// WrittenBy names the command in the file's header comment (default
	// "mirage sim calibrate"); not written as a field.
	WrittenBy string `json:"-" yaml:"-"`
}

// SiteParams are site settings a preset file may set over its base and
// slurm_conf, each optional (absent: theirs), under the names of Config's
// fields (which name the Slurm setting and its default).
type SiteParams struct {
	PriorityType    string         `json:"priority_type,omitempty" yaml:"priority_type,omitempty"`                   // priority/basic or priority/multifactor
	AccrueAlways    *bool          `json:"priority_accrue_always,omitempty" yaml:"priority_accrue_always,omitempty"` // PriorityFlags=ACCRUE_ALWAYS
	MaxJobsAccrue   *int           `json:"max_jobs_accrue,omitempty" yaml:"max_jobs_accrue,omitempty"`               // MaxJobsAccrue per user (sacctmgr; 0: no limit)
	BFWindow        *time.Duration `json:"bf_window,omitempty" yaml:"bf_window,omitempty"`
	BFMaxJobUser    *int           `json:"bf_max_job_user,omitempty" yaml:"bf_max_job_user,omitempty"`
	BFMinAgeReserve *time.Duration `json:"bf_min_age_reserve,omitempty" yaml:"bf_min_age_reserve,omitempty"`
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
	pf, err := ReadPresetFile(path)
	if err != nil {
		return Config{}, err
	}
	return pf.Build(path)
}

// ReadPresetFile reads a preset file (unknown keys are errors).
func ReadPresetFile(path string) (PresetFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PresetFile{}, fmt.Errorf("%w: preset file: %v", ErrConfig, err)
	}
	var pf PresetFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil && err != io.EOF {
		return PresetFile{}, fmt.Errorf("%w: preset file %s: %v", ErrConfig, path, err)
	}
	return pf, nil
}

// Build makes the file's configuration: its base, slurm_conf,
// slurm_conf_text and node list, then its parameters and site settings.
// name says where it came from in errors (the file's path).
func (pf *PresetFile) Build(name string) (Config, error) {
	if pf.Base == "" || isPresetPath(pf.Base) {
		return Config{}, fmt.Errorf("%w: preset file %s: base %q: want a named preset (ls6 or default)", ErrConfig, name, pf.Base)
	}
	base, err := Preset(pf.Base)
	if err != nil {
		return Config{}, fmt.Errorf("preset file %s: %w", name, err)
	}
	if pf.SlurmConf != "" {
		fh, err := os.Open(pf.SlurmConf)
		if err != nil {
			return Config{}, fmt.Errorf("%w: preset file %s: %v", ErrConfig, name, err)
		}
		defer fh.Close()
		if base, err = ParseSlurmConf(fh, base); err != nil {
			return Config{}, fmt.Errorf("preset file %s: slurm_conf: %w", name, err)
		}
	}
	if pf.SlurmConfText != "" {
		if base, err = ParseSlurmConf(strings.NewReader(pf.SlurmConfText), base); err != nil {
			return Config{}, fmt.Errorf("preset file %s: slurm_conf_text: %w", name, err)
		}
	}
	if pf.NodeList != "" {
		if base, err = readNodeList(pf.NodeList, base); err != nil {
			return Config{}, fmt.Errorf("preset file %s: node_list: %w", name, err)
		}
	}
	if len(pf.LatencyTable) > 0 {
		base.LatencyTable = pf.LatencyTable
	}
	c, err := pf.applyParams(base)
	if err == nil {
		c, err = pf.Site.Apply(c)
	}
	if err != nil {
		return Config{}, fmt.Errorf("preset file %s: %w", name, err)
	}
	return c, nil
}

// applyParams applies the calibrated parameters when the file sets nodes;
// a file without them (a site read by `mirage site`, one written by hand)
// must set none of the others, which would otherwise be silently ignored.
func (pf *PresetFile) applyParams(base Config) (Config, error) {
	if pf.Params.Nodes != 0 {
		return pf.Params.Apply(base)
	}
	if pf.Params != (Params{}) {
		return Config{}, fmt.Errorf("%w: calibrated parameters without nodes: set nodes (and every parameter, as mirage sim calibrate writes them) or none of them", ErrConfig)
	}
	return base, nil
}

// MarshalYAML leaves the calibrated parameters out of a file that sets
// none (nodes 0): they would read as explicit zeros.
func (pf PresetFile) MarshalYAML() (any, error) {
	type plain PresetFile // without this method
	var n yaml.Node
	if err := n.Encode(plain(pf)); err != nil {
		return nil, err
	}
	if pf.Params != (Params{}) {
		return &n, nil
	}
	var keys yaml.Node
	if err := keys.Encode(Params{}); err != nil {
		return nil, err
	}
	params := map[string]bool{}
	for i := 0; i+1 < len(keys.Content); i += 2 {
		params[keys.Content[i].Value] = true
	}
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !params[n.Content[i].Value] {
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
	}
	n.Content = kept
	return &n, nil
}

// WritePresetFile writes pf to path (atomically; 0644: a preset is no secret).
func WritePresetFile(path string, pf PresetFile) error { return WritePresetFileMode(path, 0o644, pf) }

// WritePresetFileMode writes pf to path atomically with the given mode
// (0600 for a file kept in the state directory).
func WritePresetFileMode(path string, mode fs.FileMode, pf PresetFile) error {
	return safefile.WriteFile(path, mode, func(w io.Writer) error {
		by := pf.WrittenBy
		if by == "" {
			by = "mirage sim calibrate"
		}
		fmt.Fprintf(w, "# mirage simulator preset, written by `%s` on %s.\n", by, time.Now().UTC().Format(time.RFC3339))
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
