package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/metrics"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// synthPolicy is a policy of a synthetic experiment: its gap is ratio
// times reactive's, less up to 2 h × (1 − ratio).
type synthPolicy struct {
	name  string
	ratio float64
}

// synthSamples makes a plausible experiment: policies on n hand-offs of
// two sizes at two load scales, seeded.
func synthSamples(n int, seed uint64) []metrics.Sample {
	return synthSamplesOf(n, seed, []float64{1, 1.2}, []synthPolicy{{"reactive", 1}, {"average", 0.7}, {"xgb", 0.4}})
}

func synthSamplesOf(n int, seed uint64, scales []float64, policies []synthPolicy) []metrics.Sample {
	r := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
	var out []metrics.Sample
	for _, scale := range scales {
		for _, nodes := range []int{1, 8} {
			for i := range n {
				chain := fmt.Sprintf("p%03d", i)
				react := time.Duration(r.ExpFloat64()*float64(5*time.Hour)*scale) + time.Minute
				class := metrics.LoadClassOf(react)
				base := metrics.Sample{Cell: fmt.Sprintf("synth/x%g/pair", scale), Protocol: "pair", ChainID: chain, Segment: 1,
					Inject: t0.Add(time.Duration(i) * 4 * time.Hour), Nodes: nodes, GPUs: 3 * nodes, LoadScale: scale, LoadClass: class}
				for _, p := range policies {
					s := base
					s.Policy = p.name
					s.Gap = time.Duration(float64(react)*p.ratio) - time.Duration(r.Float64()*float64(2*time.Hour)*(1-p.ratio))
					s.Gap = s.Gap.Truncate(time.Second)
					s.Submits = 1 + r.IntN(2)
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func synthReport(t testing.TB, n int) *Report {
	t.Helper()
	prov := metrics.Provenance{
		Mirage:  "test",
		Command: []string{"mirage", "eval", "--trace", "it's a <trace>.csv"},
		Traces:  []metrics.TraceRef{{Path: "it's a <trace>.csv", SHA256: strings.Repeat("ab", 32), Jobs: 1234}},
		Windows: []metrics.Window{{Name: "eval", From: time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)}},
		Models:  []metrics.ModelRef{{Policy: "xgb", Dir: "models/xgb", Meta: map[string]any{"kind": "xgb", "seed": 11.0, "windows": map[string]any{"train": "x"}}}},
		Cells: []metrics.CellInfo{
			{Name: "synth/x1/pair", Cell: "synth/x1/pair", Trace: "t.csv", Protocol: "pair", LoadScale: 1, Policies: []string{"reactive", "average", "xgb"}, Seeds: map[string]uint64{"sim": 1, "load": 2}, Params: map[string]string{"interval": "4h"}},
			{Name: "synth/x1.2/pair", Cell: "synth/x1.2/pair", Trace: "t.csv", Protocol: "pair", LoadScale: 1.2, Policies: []string{"reactive", "average", "xgb"}, Seeds: map[string]uint64{"sim": 1, "load": 2}},
		},
	}
	r, err := New("Test report", []string{"reactive", "average", "xgb"}, prov, synthSamples(n, 3), Bootstrap{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReportRender(t *testing.T) {
	r := synthReport(t, 60)
	dir := t.TempDir()
	if d := os.Getenv("EVAL_REPORT_DIR"); d != "" {
		dir = d
	}
	paths, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(paths)
}

// imageCheck is what the browser reports about one <img> or inline <svg>.
type imageCheck struct {
	ID       string `json:"id"`
	Complete bool   `json:"complete"`
	Decoded  bool   `json:"decoded"`
	Error    string `json:"error"`
	Width    int    `json:"w"`
	Height   int    `json:"h"`
	Inked    int    `json:"inked"` // pixels that are not background, after drawing on a canvas
	Pixels   int    `json:"pixels"`
	Src      string `json:"src"`
}

// checkImagesJS decodes every image and every figure's inline SVG (as an
// image of its serialisation), draws it on a canvas and counts the pixels
// that differ from white/transparent: an image that decodes to a blank
// canvas has none.
const checkImagesJS = `Promise.all([...document.images, ...document.querySelectorAll('figure svg')].map(async (el) => {
  let img = el;
  if (el.tagName.toLowerCase() === 'svg') {
    img = new Image();
    img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(new XMLSerializer().serializeToString(el));
  }
  const r = {id: el.closest('figure') ? el.closest('figure').id : '', complete: img.complete, decoded: false, error: '',
             w: img.naturalWidth, h: img.naturalHeight, inked: 0, pixels: 0, src: img.src.slice(0, 26)};
  try { await img.decode(); r.decoded = true; } catch (e) { r.error = String(e); return r; }
  r.w = img.naturalWidth; r.h = img.naturalHeight;
  const c = document.createElement('canvas'); c.width = r.w; c.height = r.h;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, r.w, r.h).data;
  r.pixels = r.w * r.h;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i+3] > 0 && (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250)) r.inked++;
  }
  return r;
}))`

// TestReportInChromium is the acceptance test of the HTML report: it opens
// in headless Chromium without console errors, and every plot is present,
// decodes, has a size and shows something (TestReportFiguresInChromium
// checks their layout).
func TestReportInChromium(t *testing.T) {
	chromiumPath(t)
	r := synthReport(t, 30)
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	figs, err := r.Figures()
	if err != nil {
		t.Fatal(err)
	}
	// 2 experiments (load ×1, ×1.2) × 4 plots, worked out from synthSamples.
	if len(figs) != 8 {
		t.Fatalf("figures = %d, want 8", len(figs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startChromium(t, ctx)
	abs, _ := filepath.Abs(filepath.Join(dir, HTMLFile))
	session, problems := c.openPage(t, ctx, "file://"+abs)
	var imgs []imageCheck
	if err := c.eval(ctx, session, checkImagesJS, &imgs); err != nil {
		t.Fatal(err)
	}
	if len(imgs) != len(figs) {
		t.Errorf("page has %d images and SVGs, report has %d figures", len(imgs), len(figs))
	}
	seen := map[string]bool{}
	for _, im := range imgs {
		t.Logf("image %s: %d×%d, %d of %d pixels drawn", im.ID, im.Width, im.Height, im.Inked, im.Pixels)
		seen[im.ID] = true
		if !im.Decoded || im.Width <= 0 || im.Height <= 0 {
			t.Errorf("image %s (%s): decoded %v (%s), natural size %d×%d", im.ID, im.Src, im.Decoded, im.Error, im.Width, im.Height)
			continue
		}
		// A plot has axes, labels and data: well over 1% of its pixels inked.
		if im.Inked*100 < im.Pixels {
			t.Errorf("image %s: only %d of %d pixels drawn", im.ID, im.Inked, im.Pixels)
		}
	}
	for _, f := range figs {
		if !seen[f.ID] {
			t.Errorf("figure %s not on the page", f.ID)
		}
	}
	// Give late console messages a moment, then require none.
	time.Sleep(300 * time.Millisecond)
	if p := problems.all(); len(p) > 0 {
		t.Errorf("page problems:\n%s", strings.Join(p, "\n"))
	}
	var title string
	if err := c.eval(ctx, session, "document.title", &title); err != nil || title != r.Title {
		t.Errorf("title %q (%v), want %q", title, err, r.Title)
	}
}

// TestChromiumSeesErrors shows the browser check can fail: a page with a
// broken image and a console error is reported as such.
func TestChromiumSeesErrors(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	page := `<!DOCTYPE html><html><head><title>bad</title></head><body>
<figure id="broken"><img src="data:image/svg+xml;base64,bm90IGFuIGltYWdl" alt="x"></figure>
<figure id="blank"><img src="data:image/svg+xml;base64,` + base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg" width="50" height="40"></svg>`)) + `" alt="y"></figure>
<script>console.error("boom")</script></body></html>`
	path := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startChromium(t, ctx)
	session, problems := c.openPage(t, ctx, "file://"+path)
	var imgs []imageCheck
	if err := c.eval(ctx, session, checkImagesJS, &imgs); err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 {
		t.Fatalf("images: %+v", imgs)
	}
	if imgs[0].Decoded || imgs[0].Width != 0 {
		t.Errorf("broken image decoded: %+v", imgs[0])
	}
	if !imgs[1].Decoded || imgs[1].Width != 50 || imgs[1].Inked != 0 {
		t.Errorf("blank image: %+v (want decoded 50 px wide with nothing drawn)", imgs[1])
	}
	time.Sleep(300 * time.Millisecond)
	if p := problems.all(); len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), "boom") {
		t.Errorf("console error not seen: %q", p)
	}
}

func evRender(t *testing.T, r *Report) (js, md, html []byte) {
	t.Helper()
	var a, b, c bytes.Buffer
	if err := r.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&c); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes(), c.Bytes()
}

func TestReportJSONRoundTrip(t *testing.T) {
	r := synthReport(t, 30)
	js, md, html := evRender(t, r)
	back, err := Read(bytes.NewReader(js), "report.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Fatal("report differs after a JSON round trip")
	}
	js2, md2, html2 := evRender(t, back)
	if !bytes.Equal(js, js2) || !bytes.Equal(md, md2) || !bytes.Equal(html, html2) {
		t.Error("renderings from the JSON differ from the originals")
	}
	// Bad input: wrong schema, unknown fields, not JSON.
	for _, bad := range []string{`{"schema": 99}`, `{"schema": 1, "bogus": 2}`, `<html>`} {
		if _, err := Read(strings.NewReader(bad), "x.json"); !errors.Is(err, ErrBad) {
			t.Errorf("Read(%q) = %v, want ErrBad", bad, err)
		}
	}
}

// TestReportNumbersMatchJSON checks every number shown in the HTML and the
// Markdown against report.json (Verify), and that the check catches
// a changed number or a missing row.
func TestReportNumbersMatchJSON(t *testing.T) {
	r := synthReport(t, 30)
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	n, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 48 groups (2 experiments × 3 policies × 8 size/class rows), 12 figures
	// each in HTML and Markdown, plus the gap quantiles and the CIs.
	if n < 2*48*12 {
		t.Errorf("only %d numbers checked", n)
	}
	html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
	tamper := func(name string, file string, orig []byte, edit func(string) string, want string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(edit(string(orig))), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Verify(dir)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrMismatch mentioning %q", name, err, want)
		}
		_ = os.WriteFile(filepath.Join(dir, file), orig, 0o644)
	}
	g0 := r.Groups[0]
	shown := fmt.Sprintf(`data-k="groups.0.interruption_mean_h" data-v="%s">%.2f`, strconv.FormatFloat(g0.InterruptionMean, 'g', -1, 64), g0.InterruptionMean)
	if !bytes.Contains(html, []byte(shown)) {
		t.Fatalf("HTML lacks %q", shown)
	}
	tamper("html text", HTMLFile, html, func(s string) string {
		return strings.Replace(s, shown, shown[:strings.LastIndexByte(shown, '>')+1]+fmt.Sprintf("%.2f", g0.InterruptionMean+0.01), 1)
	}, "groups.0.interruption_mean_h")
	tamper("html value", HTMLFile, html, func(s string) string {
		return strings.Replace(s, `data-k="groups.0.n" data-v="`, `data-k="groups.0.n" data-v="1`, 1)
	}, "groups.0.n")
	row := fmt.Sprintf("| %s | %d | %d | %.2f", g0.Policy, g0.N, g0.Censored, g0.InterruptionMean)
	if !bytes.Contains(md, []byte(row)) {
		t.Fatalf("Markdown lacks the row start %q", row)
	}
	tamper("md text", MarkdownFile, md, func(s string) string {
		return strings.Replace(s, row, fmt.Sprintf("| %s | %d | %d | %.2f", g0.Policy, g0.N+1, g0.Censored, g0.InterruptionMean), 1)
	}, "groups.0.n")
	tamper("md row missing", MarkdownFile, md, func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, row) {
				return strings.Join(append(lines[:i:i], lines[i+1:]...), "\n")
			}
		}
		return s
	}, "group 0 missing from report.md")
}

func TestReportSelfContainedAndEscaped(t *testing.T) {
	r := synthReport(t, 10)
	_, md, html := evRender(t, r)
	for _, bad := range []string{"<script", "<link", `src="http`, `href="http`, "url(http", "@import"} {
		if bytes.Contains(html, []byte(bad)) {
			t.Errorf("HTML contains %q: not self-contained", bad)
		}
	}
	if bytes.Contains(html, []byte("<trace>")) || !bytes.Contains(html, []byte("&lt;trace&gt;")) {
		t.Error("trace path not escaped in the HTML")
	}
	if n := bytes.Count(html, []byte(`<figure id=`)); n != 8 {
		t.Errorf("%d figures, want 8", n)
	}
	if n := bytes.Count(html, []byte(`<svg `)); n != 8 {
		t.Errorf("%d inline SVGs, want 8", n)
	}
	if bytes.Contains(html, []byte("<?xml")) || bytes.Contains(html, []byte("<img")) {
		t.Error("HTML has an XML declaration or an <img>: the figures are not inline SVG")
	}
	if !bytes.Contains(md, []byte(`mean \|gap\| (h)`)) {
		t.Error("a | in a Markdown header is not escaped")
	}
}

// splitByCell turns a report into per-(cell, policy) reports the way
// job-array tasks produce them: each non-reference policy's cell also holds
// the reference samples it ran.
func splitByCell(t *testing.T, r *Report) []*Report {
	t.Helper()
	var out []*Report
	for _, c := range r.Provenance.Cells {
		for _, pol := range c.Policies {
			var s []metrics.Sample
			for _, x := range r.Samples {
				if x.Cell == c.Cell && (x.Policy == pol || x.Policy == metrics.Reference) {
					s = append(s, x)
				}
			}
			ci := c
			ci.Name = c.Name + "/" + pol
			ci.Policies = []string{pol}
			if pol != metrics.Reference {
				ci.Policies = append(ci.Policies, metrics.Reference)
			}
			prov := r.Provenance
			prov.Cells = []metrics.CellInfo{ci}
			prov.Command = []string{"mirage", "eval", "--cell", ci.Name}
			part, err := New(r.Title, r.Policies, prov, s, r.Bootstrap)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, part)
		}
	}
	return out
}

func TestMergeEqualsWhole(t *testing.T) {
	r := synthReport(t, 30)
	parts := splitByCell(t, r)
	if len(parts) != 6 {
		t.Fatalf("%d parts", len(parts))
	}
	// Shuffle order: the merge must not depend on it.
	parts[0], parts[5] = parts[5], parts[0]
	m, err := Merge("", r.Provenance.Command, parts...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Samples, r.Samples) {
		t.Fatal("merged samples differ")
	}
	if !reflect.DeepEqual(m.Groups, r.Groups) {
		t.Fatal("merged metrics differ")
	}
	if m.Title != r.Title || !reflect.DeepEqual(m.Policies, r.Policies) {
		t.Errorf("title %q policies %v", m.Title, m.Policies)
	}
	if len(m.Provenance.Cells) != 6 || len(m.Provenance.Traces) != 1 || len(m.Provenance.Models) != 1 {
		t.Errorf("merged provenance: %d cells, %d traces, %d models", len(m.Provenance.Cells), len(m.Provenance.Traces), len(m.Provenance.Models))
	}
}

func TestMergeRejects(t *testing.T) {
	r := synthReport(t, 10)
	parts := splitByCell(t, r)
	if _, err := Merge("", nil, parts[0], parts[0]); !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), "appears in reports 1 and 2") {
		t.Errorf("same cell twice: %v", err)
	}
	// A cell whose reference outcome disagrees with another cell's.
	bad := *parts[1]
	bad.Samples = slices.Clone(bad.Samples)
	for i := range bad.Samples {
		if bad.Samples[i].Policy == metrics.Reference {
			bad.Samples[i].Gap += time.Minute
			break
		}
	}
	bad.Provenance.Cells = []metrics.CellInfo{{Name: "other"}}
	if _, err := Merge("", nil, parts[0], &bad); !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), "two different outcomes") {
		t.Errorf("conflicting samples: %v", err)
	}
	other := *parts[1]
	other.Bootstrap.Seed++
	if _, err := Merge("", nil, parts[0], &other); !errors.Is(err, ErrBad) {
		t.Errorf("different bootstrap: %v", err)
	}
	v2 := *parts[1]
	v2.Provenance.Mirage = "v9"
	if _, err := Merge("", nil, parts[0], &v2); !errors.Is(err, ErrBad) {
		t.Errorf("different version: %v", err)
	}
	if _, err := Merge("", nil); !errors.Is(err, ErrBad) {
		t.Errorf("nothing: %v", err)
	}
}

func TestHashTraceAndModelRef(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := HashTrace(p)
	// sha256("abc") from FIPS 180-2, appendix B.1
	if err != nil || ref.SHA256 != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashTrace = %+v, %v", ref, err)
	}
	if _, err := HashTrace(filepath.Join(dir, "none")); err == nil {
		t.Error("no error for a missing trace")
	}
	md := filepath.Join(dir, "xgb")
	_ = os.Mkdir(md, 0o755)
	_ = os.WriteFile(filepath.Join(md, "meta.json"), []byte(`{"kind":"xgb","seed":11}`), 0o644)
	m, err := ReadModelRef("xgb", md)
	if err != nil || m.Meta["kind"] != "xgb" || m.Meta["seed"] != 11.0 {
		t.Errorf("ReadModelRef = %+v, %v", m, err)
	}
	if _, err := ReadModelRef("rf", dir); err == nil {
		t.Error("no error for a model directory without meta.json")
	}
}

// TestAssembleEqualsStepwise: Assemble computes each figure once, with the
// final settings, and gets what New, SetRuns and SetZeroTolerance (each
// recomputing) got; a zero tolerance of 30 min, which moves the zero-
// interruption figures of the synthetic samples, and two reactive/lead
// runs make the comparison cover every figure.
func TestAssembleEqualsStepwise(t *testing.T) {
	samples := synthSamples(30, 7)
	inject := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
	var runs []metrics.RunSample
	for i, p := range []string{metrics.Reference, "lead"} {
		runs = append(runs, metrics.RunSample{Policy: p, Cell: "c", Protocol: metrics.ProtocolRun, ChainID: "a", Inject: inject, Nodes: 1, GPUs: 3,
			LoadScale: 1, LoadClass: metrics.LoadLow, Work: 10 * time.Hour, Completion: time.Duration(11+i) * time.Hour, Segments: 2, ChargedGPU: 33, UsefulGPU: 30})
	}
	prov := metrics.Provenance{Mirage: "test"}
	b := Bootstrap{Seed: 3}
	step, err := New("t", []string{metrics.Reference, "lead"}, prov, samples, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := step.SetRuns(runs); err != nil {
		t.Fatal(err)
	}
	step.SetZeroTolerance(30 * time.Minute)
	once, err := Assemble("t", []string{metrics.Reference, "lead"}, prov, samples, runs, b, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New("t", []string{metrics.Reference, "lead"}, prov, samples, b)
	if err != nil {
		t.Fatal(err)
	}
	if once.ZeroToleranceS != 1800 || len(once.RunGroups) == 0 || reflect.DeepEqual(once.Groups, plain.Groups) {
		t.Fatalf("zero tolerance %gs, %d run groups, figures moved by the tolerance: %v", once.ZeroToleranceS, len(once.RunGroups), !reflect.DeepEqual(once.Groups, plain.Groups))
	}
	if !reflect.DeepEqual(once, step) {
		t.Error("Assemble differs from New + SetRuns + SetZeroTolerance")
	}
}
