package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"

	// Every learner registers its model kinds, so trained models load.
	_ "github.com/mirage-gpu/mirage/models/learners"
)

func newModelsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List and inspect trained models",
		Long: `List the models of a models directory (each in DIR/NAME/ with its meta.json, as
mirage train writes them) or show one model's metadata: kind, feature schema,
trace, training and validation windows, seed, parameters, library versions,
decision rule and validation metrics.`,
	}
	cmd.AddCommand(newModelsLsCmd(f, nil), newModelsShowCmd(f, nil))
	return cmd
}

// modelEntry is one model of a directory.
type modelEntry struct {
	Name string      `json:"name"`
	Dir  string      `json:"dir"`
	Meta models.Meta `json:"meta"`
}

// waitSub is the sub-directory whose meta stands for a wait predictor in listings.
const waitSub = "p50"

// readModel reads the metadata of a model directory (a wait predictor's from its p50 model).
func readModel(dir string) (models.Meta, error) {
	if _, err := os.Stat(filepath.Join(dir, models.MetaFile)); err == nil {
		return models.ReadMeta(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, waitSub, models.MetaFile)); err == nil {
		return models.ReadMeta(filepath.Join(dir, waitSub))
	}
	return models.Meta{}, fmt.Errorf("%s: %w (no %s)", dir, models.ErrNoModel, models.MetaFile)
}

func listModels(dir string) ([]modelEntry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, withCode(exitBadInput, fmt.Errorf("models directory %s does not exist (train with mirage train --out %s)", dir, dir))
		}
		return nil, withCode(exitUnavailable, err)
	}
	var out []modelEntry
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		meta, err := readModel(d)
		if errors.Is(err, models.ErrNoModel) {
			continue
		}
		if err != nil {
			return nil, withCode(exitBadInput, err)
		}
		out = append(out, modelEntry{Name: e.Name(), Dir: d, Meta: meta})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// modelsLsOptions are the flags of mirage models ls.
type modelsLsOptions struct {
	dir  string
	json bool
}

func newModelsLsCmd(f *Factory, runF func(*modelsLsOptions) error) *cobra.Command {
	o := &modelsLsOptions{}
	cmd := &cobra.Command{
		Use:   "ls DIR",
		Short: "List the models in a models directory",
		Long: `List the models in DIR: name, kind, feature schema, trace, training window,
training rows and the headline validation figure (mean |gap| against the
reactive baseline for policies, median absolute error against Slurm's own
estimate for the wait predictor). A model of another feature schema than
this mirage computes is marked "(stale)": it will be refused until retrained.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return runModelsLs(f.Out, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	return cmd
}

func runModelsLs(w io.Writer, o *modelsLsOptions) error {
	ms, err := listModels(o.dir)
	if err != nil {
		return err
	}
	if o.json {
		if ms == nil {
			ms = []modelEntry{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ms)
	}
	if len(ms) == 0 {
		fmt.Fprintf(w, "no models in %s\n", o.dir)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSCHEMA\tTRACE\tTRAINED ON\tROWS\tVALIDATION")
	for _, m := range ms {
		schema := fmt.Sprintf("%s v%d", strings.TrimPrefix(m.Meta.Schema.Name, "mirage-"), m.Meta.Schema.Version)
		if staleSchema(m.Meta.Schema) != "" {
			schema += " (stale)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", m.Name, m.Meta.Kind, schema, orDash(m.Meta.Trace), window(m.Meta.Windows.TrainFrom, m.Meta.Windows.TrainUntil), m.Meta.TrainRows, headline(m.Name, m.Meta))
	}
	return tw.Flush()
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

// modelsShowOptions are the flags of mirage models show.
type modelsShowOptions struct {
	dir  string
	json bool
}

func newModelsShowCmd(f *Factory, runF func(*modelsShowOptions) error) *cobra.Command {
	o := &modelsShowOptions{}
	cmd := &cobra.Command{
		Use:   "show DIR/NAME",
		Short: "Show one model's metadata",
		Long: `Show one model's meta.json: kind and task, feature schema (version and field
count), trace and windows, seed, hyper-parameters, library versions, decision
rule, training rows and time, and every validation metric. --json prints
meta.json as stored (for a wait predictor: its p10, p50 and p90 models).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return runModelsShow(f.Out, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print meta.json")
	return cmd
}

func runModelsShow(w io.Writer, o *modelsShowOptions) error {
	dirs := []string{o.dir}
	if _, err := os.Stat(filepath.Join(o.dir, models.MetaFile)); err != nil {
		if _, err := os.Stat(filepath.Join(o.dir, waitSub, models.MetaFile)); err == nil {
			dirs = []string{filepath.Join(o.dir, "p10"), filepath.Join(o.dir, "p50"), filepath.Join(o.dir, "p90")}
		} else {
			return withCode(exitBadInput, fmt.Errorf("%s: %w (no %s): give DIR/NAME as listed by mirage models ls", o.dir, models.ErrNoModel, models.MetaFile))
		}
	}
	var metas []models.Meta
	for _, d := range dirs {
		m, err := models.ReadMeta(d)
		if err != nil {
			return withCode(exitBadInput, err)
		}
		metas = append(metas, m)
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(metas) == 1 {
			return enc.Encode(metas[0])
		}
		return enc.Encode(map[string]models.Meta{"p10": metas[0], "p50": metas[1], "p90": metas[2]})
	}
	for i, m := range metas {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeMeta(w, dirs[i], m)
	}
	return nil
}

// writeMeta prints one model's metadata as aligned key/value lines.
func writeMeta(w io.Writer, dir string, m models.Meta) {
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
		if d.Tuned != "" {
			rule += "; " + d.Tuned
		}
		kv("decision", rule)
	}
	for _, sec := range []struct {
		name string
		m    map[string]string
	}{{"param", m.Params}, {"library", m.Libraries}} {
		keys := make([]string, 0, len(sec.m))
		for k := range sec.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kv(sec.name+" "+k, sec.m[k])
		}
	}
	keys := make([]string, 0, len(m.Metrics))
	for k := range m.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv("metric "+k, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", m.Metrics[k]), "0"), "."))
	}
	tw.Flush()
}
