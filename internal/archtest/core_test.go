package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ioImports are the standard packages through which code reaches the
// outside world: files, processes, the network, logs, the system's random
// source.
var ioImports = []string{"os", "os/exec", "os/signal", "net", "log", "log/slog", "syscall", "io/ioutil", "crypto/rand"}

// engineFiles are the provisioner files that may do I/O: the Engine, the
// thin apply layer around the pure step (it logs).
var engineFiles = []string{"engine.go"}

// TestCoreDoesNoIO: the provisioner's root package decides without I/O
// (docs/design.md): no file but the Engine's imports a package of
// ioImports, nor any package below net/. Its subpackages (placement, team)
// are held by TestImportsPointInward.
func TestCoreDoesNoIO(t *testing.T) {
	dir := filepath.Join("..", "..", "provisioner")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if slices.Contains(engineFiles, name) {
			continue
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if slices.Contains(ioImports, path) || strings.HasPrefix(path, "net/") {
				t.Errorf("provisioner/%s imports %s: the core does no I/O (move it to the Engine, an adapter or cmd)", name, path)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files of %s: not the provisioner package?", checked, dir)
	}
}
