package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-gpu/mirage/internal/testenv"
)

// A rule constrains the dependencies of the module packages matching
// Subject. Patterns are paths relative to the module: "x" is package x,
// "x/..." is x and every package below it.
type rule struct {
	Subject string
	// Forbid lists module packages Subject must not depend on, except
	// those matching Allow.
	Forbid, Allow []string
	// StdOnly: Subject depends on the standard library only.
	StdOnly bool
	// Ours, when not nil, lists the only module packages Subject may
	// depend on (besides the packages Subject itself matches).
	Ours []string
}

var learners = []string{"models/xgb/...", "models/forest/...", "models/nn/...", "models/dataset/...", "models/train/..."}

var rules = []rule{
	{Subject: "provisioner/...",
		Forbid: []string{"sim/...", "slurm/...", "k8s/...", "models/...", "eval/...", "cmd/...", "internal/state/..."},
		// slurmfmt is a leaf parser of Slurm's formats, not the adapter.
		Allow: []string{"slurm/slurmfmt"}},
	{Subject: "slurm/slurmfmt", StdOnly: true},
	{Subject: "traces/...", Ours: []string{"slurm/slurmfmt", "internal/safefile"}},
	{Subject: "models", Forbid: learners},
	{Subject: "models/features/...", Forbid: learners},
	// The evaluation sits above training: a walk-forward or a site grid
	// refits models per fold (eval may import models/train); training
	// never reaches up into the evaluation.
	{Subject: "models/...", Forbid: []string{"eval/..."}},
	// eval's packages point inward: none imports the root (experiments,
	// cells, sweeps); metrics is a leaf of eval.
	{Subject: "eval/metrics/...", Forbid: []string{"eval", "eval/report/...", "eval/protocol/...", "eval/pack/...", "eval/realslurm/..."}},
	{Subject: "eval/report/...", Forbid: []string{"eval", "eval/protocol/...", "eval/pack/...", "eval/realslurm/..."}},
	{Subject: "eval/protocol/...", Forbid: []string{"eval", "eval/report/...", "eval/pack/...", "eval/realslurm/..."}},
	{Subject: "eval/pack/...", Forbid: []string{"eval"}},
	{Subject: "eval/realslurm/...", Forbid: []string{"eval"}},
}

// variants are the build variants the rules must hold in.
var variants = []string{"", "libsqlite3 xgboost"}

func TestImportsPointInward(t *testing.T) {
	goBin, err := exec.LookPath("go")
	testenv.NeedGo.Require(t, err == nil)
	mod, dir := module(t, goBin)
	for _, tags := range variants {
		name := "tags=" + tags
		if tags == "" {
			name = "no-tags"
		}
		t.Run(name, func(t *testing.T) {
			g := list(t, goBin, dir, tags)
			for _, r := range rules {
				t.Run(r.Subject, func(t *testing.T) {
					bad, present := g.check(mod, r)
					// A rule about packages this tree lacks is stale
					// (a package renamed): remove or rename it.
					testenv.Require(t, present, "a package matching the rule's subject "+r.Subject, "rename the rule after the package, or remove it")
					for _, msg := range bad {
						t.Error(msg)
					}
				})
			}
		})
	}
}

// module returns the module path and its root directory.
func module(t *testing.T, goBin string) (path, dir string) {
	t.Helper()
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	dir = filepath.Dir(gomod)
	cmd := exec.Command(goBin, "list", "-m", "-f", "{{.Path}}")
	cmd.Dir = dir
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out)), dir
}

// pkg is what `go list -json` reports of one package.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// graph is every package the module's packages depend on, by import path.
type graph struct {
	pkgs map[string]*pkg
}

// list runs `go list -deps` over the module with the given build tags.
func list(t *testing.T, goBin, dir, tags string) *graph {
	t.Helper()
	cmd := exec.Command(goBin, "list", "-e", "-deps", "-tags="+tags, "-json=ImportPath,Standard,Imports,Deps,Error", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=") // the variant's tags, nothing else
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list (tags %q): %v\n%s", tags, err, stderr.String())
	}
	g := &graph{pkgs: map[string]*pkg{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list (tags %q): package %s: %s", tags, p.ImportPath, p.Error.Err)
		}
		g.pkgs[p.ImportPath] = &p
	}
	return g
}

// match reports whether the module package path matches a rule pattern.
func match(mod, pattern, path string) bool {
	base, tree := strings.CutSuffix(pattern, "/...")
	full := mod + "/" + base
	return path == full || tree && strings.HasPrefix(path, full+"/")
}

func matchAny(mod string, patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(mod, p, path) })
}

func ours(mod, path string) bool { return path == mod || strings.HasPrefix(path, mod+"/") }

// check returns the rule's violations; present is false when no module
// package matches the rule's subject.
func (g *graph) check(mod string, r rule) (bad []string, present bool) {
	var subjects []string
	for path := range g.pkgs {
		if ours(mod, path) && match(mod, r.Subject, path) {
			subjects = append(subjects, path)
		}
	}
	if len(subjects) == 0 {
		return nil, false
	}
	slices.Sort(subjects)
	for _, s := range subjects {
		for _, d := range g.pkgs[s].Deps {
			dp := g.pkgs[d]
			var wrong bool
			switch {
			case r.StdOnly:
				wrong = dp == nil || !dp.Standard
			case !ours(mod, d):
				continue
			case r.Ours != nil:
				wrong = !match(mod, r.Subject, d) && !matchAny(mod, r.Ours, d)
			default:
				wrong = matchAny(mod, r.Forbid, d) && !matchAny(mod, r.Allow, d)
			}
			if wrong {
				bad = append(bad, fmt.Sprintf("%s must not depend on %s (import chain: %s)", s, d, strings.Join(g.chain(s, d), " -> ")))
			}
		}
	}
	return bad, true
}

// chain is a shortest import chain from one package to another.
func (g *graph) chain(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var path []string
			for ; p != ""; p = prev[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			return path
		}
		if gp := g.pkgs[p]; gp != nil {
			for _, i := range gp.Imports {
				if _, seen := prev[i]; !seen {
					prev[i] = p
					queue = append(queue, i)
				}
			}
		}
	}
	return []string{from, "?", to}
}
