package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Module  string `json:"module,omitempty"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Module = bi.Main.Path
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	return v
}

// versionOptions are the flags of mirage version.
type versionOptions struct {
	f    *Factory
	json bool
}

func newVersionCmd(f *Factory, runF func(*versionOptions) error) *cobra.Command {
	o := &versionOptions{f: f}
	cmd := &cobra.Command{
		Use: "version",
		Example: `  mirage version
  mirage version --json`,
		Short: "Print mirage's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return versionRun(o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	return cmd
}

func (v versionInfo) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "mirage %s (%s %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
	return err
}

func versionRun(o *versionOptions) error {
	return printView(o.f.Out, o.json, currentVersion(), currentVersion())
}
