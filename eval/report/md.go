package report

import (
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

// WriteMarkdown renders the report as Markdown: the verdict per experiment
// (which policy to run, and how it fares against reactive per load class),
// then per experiment the headline table, the gap distribution and the
// breakdown by job size and load class, then the provenance. The numbers are
// those of the report's groups.
func (r *Report) WriteMarkdown(w io.Writer) error {
	ew := &mdWriter{w: w}
	ew.printf("# %s\n\n", mdEscape(r.Title))
	ew.printf("%s\n\n%s\n\n", r.introduction(), r.definitions())
	for _, e := range r.experiments() {
		v := r.verdict(e)
		ew.printf("## %s\n\n%s\n\n", v.Title, strings.ReplaceAll(v.Why, "\n", " ")) // prose: a | needs no escape outside tables
		if v.Table.Title != "" && len(v.Table.Rows) > 0 {
			ew.printf("### %s\n\n", v.Table.Title)
		}
		ew.table(v.Table)
		for _, n := range v.Notes {
			ew.printf("%s\n\n", n)
		}
	}
	for _, e := range r.experiments() {
		ew.printf("## %s protocol, load ×%g\n\n", mdEscape(e.Protocol), e.LoadScale)
		for _, t := range r.tables(e) {
			if len(t.Rows) == 0 {
				continue
			}
			ew.printf("### %s\n\n", t.Title)
			ew.table(t)
			if t.Note != "" {
				ew.printf("%s\n\n", t.Note)
			}
		}
	}
	if len(r.Groups) == 0 {
		ew.printf("No samples.\n\n")
	}
	// Provenance last: what was run, on what, with which models (their
	// full metadata is in report.json).
	ew.printf("## Provenance\n\n")
	for _, l := range r.provenanceLines() {
		ew.printf("- **%s**: %s\n", l.Label, mdEscape(l.Value))
	}
	if cells := r.cellLines(); len(cells) > 0 {
		ew.printf("- **cells**: %d (listed in report.json)\n", len(cells))
	}
	for _, m := range r.Provenance.Models {
		ew.printf("- **model %s** (%s): %s\n", mdEscape(m.Policy), mdEscape(m.Dir), mdEscape(m.Summary()))
	}
	return ew.err
}

// table writes a Markdown table.
func (e *mdWriter) table(t tableView) {
	if len(t.Rows) == 0 {
		return
	}
	heads := make([]string, len(t.Heads))
	for i, h := range t.Heads {
		heads[i] = mdEscape(h)
	}
	e.printf("| %s |\n", strings.Join(heads, " | "))
	e.printf("|%s\n", strings.Repeat("---|", len(t.Heads)))
	for _, row := range t.Rows {
		texts := make([]string, len(row))
		for i, c := range row {
			texts[i] = mdEscape(c.String())
		}
		e.printf("| %s |\n", strings.Join(texts, " | "))
	}
	e.printf("\n")
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
