package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrMismatch is returned by Verify when a rendered number differs
// from report.json.
var ErrMismatch = errors.New("report does not match its JSON")

// Verify checks that every number report.html and report.md in dir
// show equals the figure in report.json. It decodes the JSON into a Report
// and finds each figure by its JSON path (figureAt: the fields' JSON names,
// as report.json spells them), formatting it by its field's unit (hours 2
// decimals, shares as percent with 1 decimal, counts whole, GPU-hours 1
// decimal), so it checks the renderers rather than repeating them. It
// returns how many numbers it checked.
func Verify(dir string) (int, error) {
	js, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return 0, err
	}
	var doc Report
	if err := json.Unmarshal(js, &doc); err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrBad, JSONFile, err)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		return 0, err
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		return 0, err
	}
	var errs []error
	nh, err := verifyHTML(&doc, string(html))
	errs = append(errs, err)
	nm, err := verifyMarkdown(&doc, string(md))
	errs = append(errs, err)
	return nh + nm, errors.Join(errs...)
}

// figureAt resolves a JSON path such as "groups.3.ci.reduction.lo" in the
// report: each part names a struct field by its JSON name (fields of
// embedded structs included, as encoding/json flattens them) or indexes a
// slice. ok is false when report.json has no value there: a missing name,
// an index out of range, a nil pointer, or a zero field tagged omitempty
// (which WriteJSON leaves out). The value is the one the JSON holds.
func figureAt(r *Report, path string) (v reflect.Value, ok bool) {
	v = reflect.ValueOf(r).Elem()
	for _, part := range strings.Split(path, ".") {
		if v, ok = deref(v); !ok {
			return v, false
		}
		switch v.Kind() {
		case reflect.Struct:
			if v, ok = jsonField(v, part); !ok {
				return v, false
			}
		case reflect.Slice:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= v.Len() {
				return v, false
			}
			v = v.Index(i)
		default:
			return v, false
		}
	}
	return deref(v)
}

// deref follows pointers; ok is false at a nil one.
func deref(v reflect.Value) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return v, false
		}
		v = v.Elem()
	}
	return v, true
}

// jsonField is the field of struct v that encoding/json writes under name
// (searching embedded structs); ok is false when it writes none there.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			if fv, ok := jsonField(v.Field(i), name); ok {
				return fv, true
			}
			continue
		}
		if !f.IsExported() || tag == "-" || cmp.Or(tag, f.Name) != name {
			continue
		}
		fv := v.Field(i)
		omitEmpty := slices.Contains(strings.Split(opts, ","), "omitempty")
		return fv, !(omitEmpty && fv.IsZero())
	}
	return reflect.Value{}, false
}

// number is a figure's value as a float64; ok is false for anything but a number.
func number(v reflect.Value) (float64, bool) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), true
	}
	return 0, false
}

// jsonText shows a figure in an error message (<nil> where the JSON has none).
func jsonText(v reflect.Value, ok bool) string {
	if f, isNum := number(v); ok && isNum {
		return fmt.Sprint(f)
	}
	return "<nil>"
}

// expectText formats a JSON figure as a reader should see it, by field name.
func expectText(field string, v float64) string {
	switch field {
	case "zero_interruption", "within_hour", "reduction", "goodput":
		return fmt.Sprintf("%.1f%%", 100*v)
	case "n", "censored", "submits", "chains":
		return fmt.Sprintf("%.0f", v)
	case "wasted_gpu_h", "charged_gpu_h_mean", "others_queued_delta_gpu_h":
		return fmt.Sprintf("%.1f", v)
	case "overhead_ratio", "charged_ratio":
		return fmt.Sprintf("%.2f×", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// fieldOf is the figure's field name in a JSON path ("ci.reduction.lo" → "reduction").
func fieldOf(path string) string {
	parts := strings.Split(path, ".")
	f := parts[len(parts)-1]
	if (f == "lo" || f == "hi") && len(parts) >= 2 {
		f = parts[len(parts)-2]
	}
	return f
}

var htmlCellRE = regexp.MustCompile(`data-k="([^"]+)" data-v="([^"]+)">([^<]*)`)

func verifyHTML(doc *Report, html string) (int, error) {
	var errs []error
	seen := map[string]bool{}
	for _, m := range htmlCellRE.FindAllStringSubmatch(html, -1) {
		key, val, text := m[1], m[2], strings.TrimSpace(m[3])
		seen[key] = true
		jv, ok := figureAt(doc, key)
		f, isNum := number(jv)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: HTML shows %s = %s, not in the JSON", ErrMismatch, key, val))
		case !isNum:
			errs = append(errs, fmt.Errorf("%w: %s is %s in the JSON", ErrMismatch, key, jv.Type()))
		case val != strconv.FormatFloat(f, 'g', -1, 64):
			errs = append(errs, fmt.Errorf("%w: %s: HTML value %s, JSON %v", ErrMismatch, key, val, f))
		case text != expectText(fieldOf(key), f):
			errs = append(errs, fmt.Errorf("%w: %s: HTML shows %q, JSON %v reads %q", ErrMismatch, key, text, f, expectText(fieldOf(key), f)))
		}
	}
	for i := range doc.Groups {
		if k := fmt.Sprintf("groups.%d.interruption_mean_h", i); !seen[k] {
			errs = append(errs, fmt.Errorf("%w: group %d missing from the HTML", ErrMismatch, i))
		}
	}
	for i := range doc.RunGroups {
		if k := fmt.Sprintf("run_groups.%d.overhead_mean_h", i); !seen[k] {
			errs = append(errs, fmt.Errorf("%w: run group %d missing from the HTML", ErrMismatch, i))
		}
	}
	return len(seen), errors.Join(errs...)
}

// markdownFields maps the Markdown column headers to JSON fields.
var markdownFields = map[string]string{
	"n": "n", "censored": "censored", "interruption mean (h)": "interruption_mean_h", "median (h)": "interruption_median_h", "p90 (h)": "interruption_p90_h",
	"overlap mean (h)": "overlap_mean_h", "overlap p90 (h)": "overlap_p90_h", "wasted GPU-h": "wasted_gpu_h",
	"zero interruption": "zero_interruption", "within 1 h": "within_hour", `mean \|gap\| (h)`: "mean_abs_gap_h",
	"reduction vs reactive": "reduction", "sbatch calls": "submits", "chains": "chains",
	"chain interruption mean (h)": "chain_interruption_mean_h", "chain median (h)": "chain_interruption_median_h", "chain p90 (h)": "chain_interruption_p90_h",
}

// runMarkdownFields maps the whole-run tables' column headers to RunStats fields.
var runMarkdownFields = map[string]string{
	"runs": "n", "censored": "censored", "completion mean (h)": "completion_mean_h", "overhead mean (h)": "overhead_mean_h",
	"overhead p90 (h)": "overhead_p90_h", "overhead × reactive": "overhead_ratio", "segments": "segments_mean", "hand-offs": "handoffs_mean",
	"downtime mean (h)": "downtime_mean_h", "GPU-h charged": "charged_gpu_h_mean", "GPU-h × reactive": "charged_ratio", "goodput": "goodput",
	"others' queue Δ (GPU-h)": "others_queued_delta_gpu_h",
}

// runTable starts the titles of the whole-run tables; runCIFields are their
// figures that may carry an interval.
const runTable = "### Whole runs"

var runCIFields = map[string]bool{"overhead_mean_h": true, "charged_gpu_h_mean": true, "overhead_ratio": true, "charged_ratio": true, "others_queued_delta_gpu_h": true}

// gapTable is the title of the gap-distribution table, whose columns
// "min (h)", "p5 (h)", ... are the quantiles in gap_h.
const gapTable = "### Signed gap distribution"

// ciFields are the figures that may carry an interval in brackets.
var ciFields = map[string]bool{"interruption_mean_h": true, "zero_interruption": true, "within_hour": true, "mean_abs_gap_h": true, "reduction": true}

var mdExperimentRE = regexp.MustCompile(`^## (Verdict, )?(\S+) protocol, load ×(\S+)$`)

func splitMDRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	// split on | not preceded by a backslash
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == '|' {
			cur.WriteString(`\|`)
			i++
			continue
		}
		if line[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(line[i])
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func verifyMarkdown(doc *Report, md string) (int, error) {
	groups := make([]metrics.GroupKey, len(doc.Groups))
	for i := range doc.Groups {
		groups[i] = doc.Groups[i].GroupKey
	}
	runGroups := make([]metrics.GroupKey, len(doc.RunGroups))
	for i := range doc.RunGroups {
		runGroups[i] = doc.RunGroups[i].GroupKey
	}
	find := func(groups []metrics.GroupKey, protocol, scale, policy string, nodes int, class string) int {
		for i, g := range groups {
			if g.Protocol == protocol && strconv.FormatFloat(g.LoadScale, 'g', -1, 64) == scale && g.Policy == policy && g.Nodes == nodes && g.LoadClass == class {
				return i
			}
		}
		return -1
	}
	var errs []error
	checked := 0
	var protocol, scale string
	var heads []string
	inGap, inRuns, inVerdict := false, false, false
	rowsSeen, gapSeen, runsSeen := map[int]bool{}, map[int]bool{}, map[int]bool{} // metric rows, gap-distribution rows, whole-run rows (outside the verdicts, which repeat some)
	for ln, line := range strings.Split(md, "\n") {
		if m := mdExperimentRE.FindStringSubmatch(line); m != nil {
			inVerdict, protocol, scale, heads = m[1] != "", m[2], m[3], nil
			inGap, inRuns = false, false // a section's tables are titled within it
			continue
		}
		if strings.HasPrefix(line, "### ") {
			inGap, inRuns = strings.HasPrefix(line, gapTable), strings.HasPrefix(line, runTable)
		}
		if !strings.HasPrefix(line, "|") || protocol == "" {
			heads = nil
			continue
		}
		cells := splitMDRow(line)
		if heads == nil {
			heads = cells
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		if len(cells) != len(heads) {
			errs = append(errs, fmt.Errorf("%w: report.md line %d has %d cells, its header %d", ErrMismatch, ln+1, len(cells), len(heads)))
			continue
		}
		nodes, class, first := 0, metrics.AllClasses, 1
		if len(heads) > 2 && heads[1] == "size" && heads[2] == "load class" {
			first = 3
			class = strings.TrimSuffix(cells[2], fewMark) // a group of few hand-offs is marked
			if cells[1] != "all" {
				if _, err := fmt.Sscanf(cells[1], "%d", &nodes); err != nil {
					errs = append(errs, fmt.Errorf("%w: report.md line %d: size %q", ErrMismatch, ln+1, cells[1]))
					continue
				}
			}
		}
		list, prefix, fields, cis := groups, "groups", markdownFields, ciFields
		if inRuns {
			list, prefix, fields, cis = runGroups, "run_groups", runMarkdownFields, runCIFields
		}
		gi := find(list, protocol, scale, strings.ReplaceAll(cells[0], `\|`, "|"), nodes, class)
		if gi < 0 {
			errs = append(errs, fmt.Errorf("%w: report.md line %d: no %s entry %s ×%s %s %d %s in the JSON", ErrMismatch, ln+1, prefix, protocol, scale, cells[0], nodes, class))
			continue
		}
		switch {
		case inVerdict:
		case inGap:
			gapSeen[gi] = true
		case inRuns:
			runsSeen[gi] = true
		default:
			rowsSeen[gi] = true
		}
		for ci := first; ci < len(cells); ci++ {
			field, ok := fields[heads[ci]]
			if inGap {
				field, ok = "gap_h."+strings.TrimSuffix(heads[ci], " (h)"), strings.HasSuffix(heads[ci], " (h)")
			}
			if !ok {
				errs = append(errs, fmt.Errorf("%w: report.md line %d: unknown column %q", ErrMismatch, ln+1, heads[ci]))
				continue
			}
			text, ci2, hasCI := strings.Cut(cells[ci], " [")
			key := fmt.Sprintf("%s.%d.%s", prefix, gi, field)
			jv, ok := figureAt(doc, key)
			if !ok {
				if text != "–" {
					errs = append(errs, fmt.Errorf("%w: report.md line %d shows %s = %q, not in the JSON", ErrMismatch, ln+1, key, text))
				}
				continue
			}
			f, _ := number(jv)
			if want := expectText(fieldOf(field), f); text != want {
				errs = append(errs, fmt.Errorf("%w: report.md line %d: %s shows %q, JSON %v reads %q", ErrMismatch, ln+1, key, text, f, want))
			}
			checked++
			if hasCI {
				lo, hi, _ := strings.Cut(strings.TrimSuffix(ci2, "]"), "–")
				for _, b := range []struct{ end, text string }{{"lo", lo}, {"hi", hi}} {
					ck := fmt.Sprintf("%s.%d.ci.%s.%s", prefix, gi, field, b.end)
					cv, ok := figureAt(doc, ck)
					cf, isNum := number(cv)
					if !ok || !isNum || !cis[field] || b.text != expectText(field, cf) {
						errs = append(errs, fmt.Errorf("%w: report.md line %d: %s shows %q, JSON %s", ErrMismatch, ln+1, ck, b.text, jsonText(cv, ok)))
					}
					checked++
				}
			}
		}
	}
	for i, g := range groups {
		if !rowsSeen[i] {
			errs = append(errs, fmt.Errorf("%w: group %d missing from report.md", ErrMismatch, i))
		}
		if g.Nodes == 0 && g.LoadClass == metrics.AllClasses && !gapSeen[i] {
			errs = append(errs, fmt.Errorf("%w: group %d missing from report.md's gap distribution", ErrMismatch, i))
		}
	}
	for i := range runGroups {
		if !runsSeen[i] {
			errs = append(errs, fmt.Errorf("%w: run group %d missing from report.md", ErrMismatch, i))
		}
	}
	return checked, errors.Join(errs...)
}
