package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

func sortedMapKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// mdEscape keeps user text from breaking a Markdown table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

// WriteMarkdown renders the report as Markdown: provenance, then per
// experiment the headline table, the gap distribution and the breakdown
// by job size and load class. The numbers are those of the report's groups.
func (r *Report) WriteMarkdown(w io.Writer) error {
	ew := &mdWriter{w: w}
	ew.printf("# %s\n\n", mdEscape(r.Title))
	ew.printf("Gap = successor start − predecessor end, per hand-off. Interruption = max(gap, 0) and overlap = max(−gap, 0), averaged over all hand-offs (zeros included); wasted GPU-hours = Σ overlap × GPUs. Load class by the reactive policy's gap on the same hand-off (low ≤ 2 h, medium 2–12 h, heavy > 12 h). Reduction = 1 − Σ interruption / Σ reactive interruption over the same hand-offs.\n\n")
	ew.printf("## Provenance\n\n")
	for _, l := range r.provenanceLines() {
		ew.printf("- **%s**: %s\n", l.Label, mdEscape(l.Value))
	}
	if cells := r.cellLines(); len(cells) > 0 {
		ew.printf("- **cells**:\n")
		for _, c := range cells {
			ew.printf("  - %s\n", mdEscape(c))
		}
	}
	for _, m := range r.Provenance.Models {
		meta, _ := json.Marshal(m.Meta)
		ew.printf("- **model %s** (%s): `%s`\n", mdEscape(m.Policy), mdEscape(m.Dir), strings.ReplaceAll(string(meta), "`", "'"))
	}
	ew.printf("\n")
	for _, e := range r.experiments() {
		ew.printf("## %s protocol, load ×%g\n\n", mdEscape(e.Protocol), e.LoadScale)
		for _, t := range r.tables(e) {
			if len(t.Rows) == 0 {
				continue
			}
			ew.printf("### %s\n\n", t.Title)
			heads := make([]string, len(t.Heads))
			for i, h := range t.Heads {
				heads[i] = mdEscape(h)
			}
			ew.printf("| %s |\n", strings.Join(heads, " | "))
			ew.printf("|%s\n", strings.Repeat("---|", len(t.Heads)))
			for _, row := range t.Rows {
				texts := make([]string, len(row))
				for i, c := range row {
					texts[i] = mdEscape(c.String())
				}
				ew.printf("| %s |\n", strings.Join(texts, " | "))
			}
			ew.printf("\n")
		}
	}
	if len(r.Groups) == 0 {
		ew.printf("No samples.\n")
	}
	return ew.err
}

// mdWriter keeps the first write error.
type mdWriter struct {
	w   io.Writer
	err error
}

func (e *mdWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}
