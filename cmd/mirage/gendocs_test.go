package main

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
)

// cliReference is the committed command reference, relative to this package.
const cliReference = "../../docs/reference/cli"

// TestDocsReferenceCurrent regenerates the command reference into a temporary
// directory and fails when docs/reference/cli differs: run make docs.
func TestDocsReferenceCurrent(t *testing.T) {
	dir := t.TempDir()
	root := newRootCmd(testFactory(nil))
	root.SetArgs([]string{"gen-docs", "--dir", dir})
	if err := root.Execute(); err != nil {
		t.Fatalf("gen-docs: %v", err)
	}
	want := readPages(t, dir)
	got := readPages(t, cliReference)
	for name, page := range want {
		old, ok := got[name]
		switch {
		case !ok:
			t.Errorf("docs/reference/cli/%s is missing: run make docs", name)
		case !bytes.Equal(old, page):
			t.Errorf("docs/reference/cli/%s is out of date: run make docs", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/reference/cli/%s documents no command: run make docs (it removes stale pages)", name)
		}
	}
}

// TestGenDocsHidden: gen-docs is for make docs, not for users' help or the reference.
func TestGenDocsHidden(t *testing.T) {
	dir := t.TempDir()
	root := newRootCmd(testFactory(nil))
	root.SetArgs([]string{"gen-docs", "--dir", dir})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	pages := readPages(t, dir)
	if _, ok := pages["mirage_gen-docs.md"]; ok {
		t.Error("the hidden gen-docs command has a reference page")
	}
	for _, name := range []string{"mirage.md", "mirage_submit.md", "mirage_daemon.md", "mirage_eval_merge.md"} {
		if _, ok := pages[name]; !ok {
			t.Errorf("no page %s among %v", name, slices.Sorted(maps.Keys(pages)))
		}
	}
	for name, page := range pages {
		for _, bad := range []string{"Auto generated", os.Getenv("HOME") + "/"} {
			if bad != "/" && bytes.Contains(page, []byte(bad)) {
				t.Errorf("%s contains %q (machine- or date-dependent)", name, bad)
			}
		}
	}
}

func readPages(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// TestDocsLinks checks that every relative link in README.md and docs/ names
// an existing file and, with #anchor, a heading of that file.
func TestDocsLinks(t *testing.T) {
	files := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			st, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if anchor != "" && !st.IsDir() && !slices.Contains(headingAnchors(t, dest), anchor) {
				t.Errorf("%s: link %s: no heading #%s in %s", f, target, anchor, dest)
			}
		}
	}
}

// headingAnchors lists the anchors GitHub gives a Markdown file's headings.
func headingAnchors(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inCode := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var s strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				s.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				s.WriteRune(r)
			}
		}
		out = append(out, s.String())
	}
	return out
}

// TestHelpDocsPointers: every docs page a command's help points to exists.
func TestHelpDocsPointers(t *testing.T) {
	page := regexp.MustCompile(`docs/[A-Za-z0-9/._-]+\.md`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, p := range page.FindAllString(c.Long, -1) {
			if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
				t.Errorf("mirage %s: help points to %s: %v", c.CommandPath(), p, err)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testFactory(nil)))
}

// guideFigure is a measured ratio as the guides would quote one ("0.09×",
// "1.3×"); a multiplication sign with a space ("2 × pressure") is a formula.
var guideFigure = regexp.MustCompile(`\d+(?:\.\d+)?×`)

// figuresOffPage returns, for one Markdown file's text, every measured
// ratio that stands in a paragraph linking no results page holding it.
// pages maps a link target as written in the paragraph to that page's text.
func figuresOffPage(text string, page func(target string) (string, bool)) []string {
	link := regexp.MustCompile(`\]\(([^)\s#]*results/[^)\s#]+)`)
	var off []string
	for _, para := range strings.Split(text, "\n\n") {
		figs := guideFigure.FindAllString(para, -1)
		if len(figs) == 0 {
			continue
		}
		var linked []string
		for _, m := range link.FindAllStringSubmatch(para, -1) {
			if body, ok := page(m[1]); ok {
				linked = append(linked, body)
			}
		}
		for _, f := range figs {
			if !slices.ContainsFunc(linked, func(body string) bool { return strings.Contains(body, f) }) {
				off = append(off, f)
			}
		}
	}
	return off
}

func TestFiguresOffPage(t *testing.T) {
	pages := map[string]string{"../results/a.md": "| pin | 0.09× |"}
	page := func(target string) (string, bool) { b, ok := pages[target]; return b, ok }
	// Worked out by hand: the first paragraph's 0.09× is on the page it
	// links; the second's 0.50× is not on it; the third links nothing; the
	// fourth is a formula (space before ×) and no figure.
	text := "pin has 0.09× reactive's gap ([page](../results/a.md)).\n\n" +
		"lead has 0.50× ([page](../results/a.md)).\n\n" +
		"xgb has 1.2× the oracle.\n\n" +
		"it costs 2 × pressure GPUs."
	if got, want := figuresOffPage(text, page), []string{"0.50×", "1.2×"}; !slices.Equal(got, want) {
		t.Errorf("figuresOffPage = %q, want %q", got, want)
	}
}

// TestGuideFiguresOnPages is issue 49's guard on the guides: a measured
// ratio in the README or a guide stands in a paragraph that links the
// results page holding it, so a regenerated page cannot leave a guide
// quoting a figure it no longer has.
func TestGuideFiguresOnPages(t *testing.T) {
	files, err := filepath.Glob("../../docs/guide/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		page := func(target string) (string, bool) {
			body, err := os.ReadFile(filepath.Join(filepath.Dir(f), target))
			return string(body), err == nil
		}
		for _, fig := range figuresOffPage(string(b), page) {
			t.Errorf("%s: %s is on no results page the paragraph links: link the page that holds it, or remove it", f, fig)
		}
	}
}
