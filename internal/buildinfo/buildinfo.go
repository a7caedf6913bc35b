// Package buildinfo says which mirage this is: the version stamped at build
// time (make: -ldflags "-X .../internal/buildinfo.version=..."), else the
// module version Go recorded, and the toolchain and platform.
package buildinfo

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X github.com/mirage-gpu/mirage/internal/buildinfo.version=...".
var version = "dev"

// Info is mirage's version, as mirage version prints it.
type Info struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Module  string `json:"module,omitempty"`
}

// Current is the running binary's Info.
func Current() Info {
	v := Info{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Module = bi.Main.Path
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	return v
}

// WriteText prints the one-line form.
func (v Info) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "mirage %s (%s %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
	return err
}
