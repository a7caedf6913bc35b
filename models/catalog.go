package models

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
)

// ErrModelsDir: a models directory could not be read (with the underlying error).
var ErrModelsDir = errors.New("models directory unreadable")

// dirError is err, also matching ErrModelsDir, with err's message.
type dirError struct{ err error }

func (e dirError) Error() string   { return e.err.Error() }
func (e dirError) Unwrap() []error { return []error{e.err, ErrModelsDir} }

// waitSub is the sub-directory whose meta stands for a wait predictor in listings.
const waitSub = "p50"

// Entry is one model of a models directory.
type Entry struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	Meta Meta   `json:"meta"`
}

// Catalog is the models of a models directory (each in Dir/NAME/ with its
// meta.json, a wait predictor's from its p50 model), sorted by name.
type Catalog struct {
	Dir     string
	Entries []Entry // never nil
}

// List reads the catalog of dir. A failure to read dir itself wraps ErrModelsDir.
func List(dir string) (*Catalog, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, dirError{err}
	}
	c := &Catalog{Dir: dir, Entries: []Entry{}}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		meta, err := readEntry(d)
		if errors.Is(err, ErrNoModel) {
			continue
		}
		if err != nil {
			return nil, err
		}
		c.Entries = append(c.Entries, Entry{Name: e.Name(), Dir: d, Meta: meta})
	}
	sort.Slice(c.Entries, func(i, j int) bool { return c.Entries[i].Name < c.Entries[j].Name })
	return c, nil
}

// readEntry reads the metadata of a model directory (a wait predictor's from its p50 model).
func readEntry(dir string) (Meta, error) {
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err == nil {
		return ReadMeta(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, waitSub, MetaFile)); err == nil {
		return ReadMeta(filepath.Join(dir, waitSub))
	}
	return Meta{}, fmt.Errorf("%s: %w (no %s)", dir, ErrNoModel, MetaFile)
}

// WriteText prints the catalog as a table: name, kind, feature schema (marked
// "(stale)" when this build computes another), trace, training window, rows
// and the headline validation figure.
func (c *Catalog) WriteText(w io.Writer) error {
	if len(c.Entries) == 0 {
		_, err := fmt.Fprintf(w, "no models in %s\n", c.Dir)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSCHEMA\tTRACE\tTRAINED ON\tROWS\tVALIDATION")
	for _, m := range c.Entries {
		schema := fmt.Sprintf("%s v%d", strings.TrimPrefix(m.Meta.Schema.Name, "mirage-"), m.Meta.Schema.Version)
		if staleSchema(m.Meta.Schema) != "" {
			schema += " (stale)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", m.Name, m.Meta.Kind, schema, orDash(m.Meta.Trace), window(m.Meta.Windows.TrainFrom, m.Meta.Windows.TrainUntil), m.Meta.TrainRows, m.Meta.Headline())
	}
	return tw.Flush()
}

// Card is one model's metadata as shown by `mirage models show`: one meta,
// or a wait predictor's p10, p50 and p90.
type Card struct {
	Dirs  []string
	Metas []Meta
}

// ReadCard reads the metadata of the model in dir (wrapping ErrNoModel when
// dir holds none).
func ReadCard(dir string) (*Card, error) {
	c := &Card{Dirs: []string{dir}}
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err != nil {
		if _, err := os.Stat(filepath.Join(dir, waitSub, MetaFile)); err != nil {
			return nil, fmt.Errorf("%s: %w (no %s)", dir, ErrNoModel, MetaFile)
		}
		c.Dirs = nil
		for _, d := range WaitDirs {
			c.Dirs = append(c.Dirs, filepath.Join(dir, d))
		}
	}
	for _, d := range c.Dirs {
		m, err := ReadMeta(d)
		if err != nil {
			return nil, err
		}
		c.Metas = append(c.Metas, m)
	}
	return c, nil
}

// JSON is what --json prints: the meta as stored, or a map of the wait
// predictor's three.
func (c *Card) JSON() any {
	if len(c.Metas) == 1 {
		return c.Metas[0]
	}
	out := map[string]Meta{}
	for i, d := range c.Dirs {
		out[filepath.Base(d)] = c.Metas[i]
	}
	return out
}

// WriteText prints each meta as aligned key/value lines, separated by blank lines.
func (c *Card) WriteText(w io.Writer) error {
	for i, m := range c.Metas {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := m.writeText(w, c.Dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m Meta) writeText(w io.Writer, dir string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	kv := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	kv("model", dir)
	kv("kind", string(m.Kind)+" ("+string(m.Task)+")")
	kv("features", fmt.Sprintf("%s v%d, %d fields%s", m.Schema.Name, m.Schema.Version, len(m.Schema.Fields), staleSchema(m.Schema)))
	kv("trace", orDash(m.Trace))
	kv("training", window(m.Windows.TrainFrom, m.Windows.TrainUntil))
	kv("validation", window(m.Windows.ValidFrom, m.Windows.ValidUntil))
	kv("seed", fmt.Sprint(m.Seed))
	kv("rows", fmt.Sprint(m.TrainRows))
	kv("fit", fmt.Sprintf("%.1f s", m.TrainSeconds))
	if !m.Created.IsZero() {
		kv("created", m.Created.Format(time.RFC3339))
	}
	if d := m.Decision; d != nil {
		rule := fmt.Sprintf("submit when score ≥ %.4g", d.Threshold)
		if len(d.BySize) > 0 {
			var parts []string
			for _, st := range d.BySize {
				parts = append(parts, fmt.Sprintf("%.4g for %d-node chains", st.Threshold, st.Nodes))
			}
			rule = "submit when score ≥ " + strings.Join(parts, ", ") + fmt.Sprintf(" (%.4g otherwise)", d.Threshold)
		}
		if d.Target != "" {
			rule += " (target " + d.Target + ")"
		}
		if d.Hold > 0 {
			rule += fmt.Sprintf("; hold while the scheduler's plan starts the successor more than %g h early", d.Hold)
		}
		if o := d.Online; o != nil {
			rule += "; online: " + o.String()
		}
		if d.Tuned != "" {
			rule += "; " + d.Tuned
		}
		kv("decision", rule)
	}
	for _, sec := range []struct {
		name string
		m    map[string]string
	}{{"param", m.Params}, {"library", m.Libraries}} {
		for _, k := range sortedKeys(sec.m) {
			kv(sec.name+" "+k, sec.m[k])
		}
	}
	for _, k := range sortedKeys(m.Metrics) {
		kv("metric "+k, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", m.Metrics[k]), "0"), "."))
	}
	return tw.Flush()
}

// Headline is the model's key validation figure for tables.
func (m Meta) Headline() string {
	mt := m.Metrics
	if _, ok := mt["valid_slurm_median_abs_err_s"]; ok {
		return fmt.Sprintf("median |err| %s (Slurm %s)", durS(mt["valid_estimated_median_abs_err_s"]), durS(mt["valid_slurm_median_abs_err_s"]))
	}
	if v, ok := mt["valid_mean_abs_gap_h"]; ok {
		return fmt.Sprintf("mean |gap| %.2f h (reactive %.2f h)", v, mt["valid_reactive_mean_abs_gap_h"])
	}
	if v, ok := mt["calib_mean_abs_gap_h"]; ok {
		return fmt.Sprintf("calibration mean |gap| %.2f h", v)
	}
	if keys := sortedKeys(mt); len(keys) > 0 {
		return fmt.Sprintf("%s %.3g", keys[0], mt[keys[0]])
	}
	return "-"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func durS(sec float64) string {
	return (time.Duration(sec * float64(time.Second))).Round(time.Second).String()
}

// staleSchema says why a model's feature schema is not the one this build
// computes for its family ("" when it is).
func staleSchema(s features.SchemaID) string {
	cur, ok := features.CurrentSchema(s.Name)
	switch {
	case !ok:
		return fmt.Sprintf(" — stale: this mirage has no %q features; retrain", s.Name)
	case features.CheckSchema(s, cur) != nil:
		return fmt.Sprintf(" — stale: this mirage computes %s v%d; retrain", cur.Name, cur.Version)
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func window(from, until time.Time) string {
	f := func(t time.Time) string {
		if t.IsZero() {
			return "…"
		}
		return t.Format("2006-01-02")
	}
	if from.IsZero() && until.IsZero() {
		return "-"
	}
	return f(from) + " – " + f(until)
}
