package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles writes a CPU profile of the whole run to $MIRAGE_CPUPROFILE
// and a heap profile at its end to $MIRAGE_MEMPROFILE, when set: what a
// daemon cycle costs on a site's own cluster (docs/results/daemon-scale.md
// measures it on a stand-in). The returned function stops them.
func startProfiles(getenv func(string) string) func() {
	var stops []func()
	if p := getenv("MIRAGE_CPUPROFILE"); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		} else {
			fmt.Fprintf(os.Stderr, "mirage: MIRAGE_CPUPROFILE %s: not profiling (%v)\n", p, err)
		}
	}
	if p := getenv("MIRAGE_MEMPROFILE"); p != "" {
		stops = append(stops, func() {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				fmt.Fprintf(os.Stderr, "mirage: MIRAGE_MEMPROFILE %s: %v\n", p, err)
				return
			}
			defer f.Close()
			runtime.GC()
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
