package report

import (
	"html/template"
	"io"
)

// htmlTemplate is the self-contained report page: inline CSS, plots as
// inline SVG the full width of the page, no scripts, no external assets.
var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 75em; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f3f3f3; }
td.label { text-align: left; }
.ci { color: #666; font-size: 0.9em; }
figure { margin: 1em 0 2em; }
figure svg { display: block; width: 100%; height: auto; border: 1px solid #eee; box-sizing: border-box; }
figcaption { color: #555; font-size: 0.9em; }
dl.prov dt { font-weight: bold; margin-top: 0.4em; }
dl.prov dd { margin-left: 1.5em; font-family: ui-monospace, monospace; font-size: 0.85em; word-break: break-all; }
details pre { white-space: pre-wrap; font-size: 0.8em; }
section.verdict { border-left: 4px solid #2a7; padding: 0 1em; margin: 1em 0 2em; background: #f6fbf8; }
p.defs, p.note { color: #444; font-size: 0.9em; }
section.verdict p.note { margin: 0.3em 0; }
details.prov-box summary h2 { display: inline; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Intro}}</p>
<p class="defs">{{.Definitions}}</p>
{{range .Verdicts}}<section class="verdict">
<h2>{{.Title}}</h2>
<p>{{.Why}}</p>
{{with .Table}}{{template "table" .}}{{end}}
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}</section>
{{end}}
{{range .Experiments}}
<h2>{{.Title}}</h2>
{{range .Figures}}<figure id="{{.ID}}">
{{.SVG}}
<figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption>
</figure>
{{end}}
{{range .Tables}}{{if .Rows}}<h3>{{.Title}}</h3>
{{template "table" .}}{{with .Note}}<p class="note">{{.}}</p>
{{end}}{{end}}{{end}}
{{else}}<p>No samples.</p>
{{end}}
<details class="prov-box"><summary><h2>Provenance</h2></summary>
<dl class="prov">
{{range .Provenance}}<dt>{{.Label}}</dt><dd>{{.Value}}</dd>
{{end}}{{if .Cells}}<dt>cells</dt>{{range .Cells}}<dd>{{.}}</dd>{{end}}{{end}}
{{range .Models}}<dt>model {{.Policy}}</dt><dd>{{.Dir}}: {{.Meta}}</dd>
{{end}}</dl>
</details>
</body>
</html>
{{define "table"}}{{if .Rows}}<table id="{{.ID}}">
<thead><tr>{{range .Heads}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}{{if .Key}}<td data-k="{{.Key}}" data-v="{{.Value}}">{{.Text}}{{with .CI}} <span class="ci">[<span data-k="{{.LoKey}}" data-v="{{.Lo}}">{{.LoText}}</span>–<span data-k="{{.HiKey}}" data-v="{{.Hi}}">{{.HiText}}</span>]</span>{{end}}</td>{{else}}<td class="label">{{.Text}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}{{end}}`))

type figureView struct {
	ID, Title, Caption string
	SVG                template.HTML
}

type experimentView struct {
	Title   string
	Figures []figureView
	Tables  []tableView
}

type modelView struct {
	Policy, Dir, Meta string
}

type htmlView struct {
	Title       string
	Intro       string // the first paragraph, in plain words
	Definitions string // the figures' definitions
	Verdicts    []verdictView
	Provenance  []provenanceView
	Cells       []string
	Models      []modelView
	Experiments []experimentView
}

// WriteHTML renders the report as one self-contained HTML page with the
// figures inline as SVG.
func (r *Report) WriteHTML(w io.Writer) error {
	v := htmlView{Title: r.Title, Intro: r.introduction(), Definitions: r.definitions(), Provenance: r.provenanceLines(), Cells: r.cellLines()}
	for _, m := range r.Provenance.Models {
		v.Models = append(v.Models, modelView{m.Policy, m.Dir, m.Summary()})
	}
	for _, e := range r.experiments() {
		v.Verdicts = append(v.Verdicts, r.verdict(e))
	}
	for _, e := range r.experiments() {
		ev := experimentView{Title: e.Protocol + " protocol, load ×" + fullFloat(e.LoadScale), Tables: r.tables(e)}
		figs, err := r.figuresOf(e)
		if err != nil {
			return err
		}
		for _, f := range figs {
			ev.Figures = append(ev.Figures, figureView{
				ID: f.ID, Title: f.Title, Caption: f.Caption,
				// The SVG is generated here (gonum/plot, its text escaped), not user input.
				SVG: template.HTML(f.SVG),
			})
		}
		v.Experiments = append(v.Experiments, ev)
	}
	return htmlTemplate.Execute(w, v)
}
