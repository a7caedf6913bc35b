package eval

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/report"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ArrayOptions are the sbatch settings of an emitted job array.
type ArrayOptions struct {
	Partition string `yaml:"partition"` // partition(s), e.g. "long"
	Account   string `yaml:"account"`   // account to charge
	QOS       string `yaml:"qos"`       // QOS
	Time      string `yaml:"time"`      // limit per task in Slurm's format (default 01:00:00)
	CPUs      int    `yaml:"cpus"`      // CPUs per task (default 2); also the simulations run in parallel
	Mem       string `yaml:"mem"`       // memory per task, e.g. 4G
	Parallel  int    `yaml:"parallel"`  // at most this many tasks at once (0: no limit)
	Mirage    string `yaml:"mirage"`    // the mirage binary on the compute nodes (default: the one emitting)
}

// ErrBadSweep is returned for a sweep file that cannot be used.
var ErrBadSweep = errors.New("bad sweep file")

// ParseSweep reads a sweep file (YAML; unknown keys are errors). Relative
// paths in it (traces, models, slurm_conf, out, slurm.mirage) are taken
// relative to the file's directory and made absolute. The experiment is
// normalised.
func ParseSweep(path string) (*Experiment, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSweep, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSweep, err)
	}
	e, err := DecodeSweep(bytes.NewReader(b), path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for i := range e.Traces {
		e.Traces[i] = abs(e.Traces[i])
	}
	e.Models, e.SlurmConf, e.Slurm.Mirage = abs(e.Models), abs(e.SlurmConf), abs(e.Slurm.Mirage)
	if e.Out == "" {
		e.Out = "eval-out"
	}
	e.Out = abs(e.Out)
	return e, nil
}

// DecodeSweep decodes and normalises a sweep document; name is used in errors.
func DecodeSweep(r io.Reader, name string) (*Experiment, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var e Experiment
	if err := dec.Decode(&e); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: empty", ErrBadSweep, name)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrBadSweep, name, err)
	}
	if err := e.Normalize(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadSweep, name, err)
	}
	return &e, nil
}

var (
	slurmNameRE = regexp.MustCompile(`^[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*$`)
	slurmTimeRE = regexp.MustCompile(`^[0-9]+(-[0-9]+)?(:[0-9]+){0,2}$`)
	slurmMemRE  = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
)

// CellFile is where array task i writes its report inside the output directory.
func CellFile(out string, i int) string {
	return filepath.Join(out, "cells", fmt.Sprintf("cell-%04d.json", i))
}

// ArrayScript renders the sbatch job-array script of an experiment read
// from sweepPath: one array task per cell, each running
// `mirage eval --sweep SWEEP --cell $SLURM_ARRAY_TASK_ID --out OUT`.
// Values in #SBATCH lines are checked against Slurm's syntax (they cannot
// be quoted there); paths on the command line are single-quoted. Logs go
// to OUT/logs, which the caller must create before submitting.
func ArrayScript(e *Experiment, sweepPath, mirage, version string) (string, error) {
	o := e.Slurm
	if o.Mirage != "" {
		mirage = o.Mirage
	}
	for _, p := range []struct{ name, v string }{{"sweep", sweepPath}, {"mirage", mirage}, {"out", e.Out}} {
		if !filepath.IsAbs(p.v) {
			return "", fmt.Errorf("%w: %s path %q must be absolute (array tasks run elsewhere)", ErrBadSweep, p.name, p.v)
		}
	}
	if strings.ContainsAny(e.Out, " \t\n%\"'\\") {
		return "", fmt.Errorf("%w: out %q: sbatch's --output cannot hold spaces, quotes, backslashes or %%; choose another output directory", ErrBadSweep, e.Out)
	}
	check := func(what, v string, re *regexp.Regexp) error {
		if v != "" && !re.MatchString(v) {
			return fmt.Errorf("%w: slurm.%s %q is not a valid Slurm value", ErrBadSweep, what, v)
		}
		return nil
	}
	if err := errors.Join(check("partition", o.Partition, slurmNameRE), check("account", o.Account, slurmNameRE),
		check("qos", o.QOS, slurmNameRE), check("time", o.Time, slurmTimeRE), check("mem", o.Mem, slurmMemRE)); err != nil {
		return "", err
	}
	if o.CPUs < 0 || o.Parallel < 0 {
		return "", fmt.Errorf("%w: slurm.cpus and slurm.parallel must not be negative", ErrBadSweep)
	}
	if o.Time == "" {
		o.Time = "01:00:00"
	}
	if o.CPUs == 0 {
		o.CPUs = 2
	}
	n := len(e.Cells())
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "# mirage eval job array: %d cells of %s\n", n, commentSafe(sweepPath))
	fmt.Fprintf(&b, "# (written by mirage %s; regenerate with mirage eval --sweep ... --emit-array).\n", commentSafe(version))
	fmt.Fprintf(&b, "# Task i runs cell i and writes %s; when all are done:\n", commentSafe(CellFile(e.Out, 0)))
	fmt.Fprintf(&b, "#   mirage eval merge --out %s %s\n", commentSafe(report.ShellQuote(e.Out)), commentSafe(report.ShellQuote(filepath.Join(e.Out, "cells"))))
	fmt.Fprintf(&b, "#SBATCH --job-name=mirage-eval\n")
	array := fmt.Sprintf("0-%d", n-1)
	if o.Parallel > 0 {
		array += "%" + strconv.Itoa(o.Parallel)
	}
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", array)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(e.Out, "logs", "cell-%a.out"))
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", o.Time)
	fmt.Fprintf(&b, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%d\n", o.CPUs)
	for _, kv := range [][2]string{{"partition", o.Partition}, {"account", o.Account}, {"qos", o.QOS}, {"mem", o.Mem}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "#SBATCH --%s=%s\n", kv[0], kv[1])
		}
	}
	fmt.Fprintf(&b, "set -euo pipefail\n")
	fmt.Fprintf(&b, "exec %s eval --sweep %s --cell \"$SLURM_ARRAY_TASK_ID\" --workers \"${SLURM_CPUS_PER_TASK:-%d}\" --out %s\n",
		report.ShellQuote(mirage), report.ShellQuote(sweepPath), o.CPUs, report.ShellQuote(e.Out))
	return b.String(), nil
}

// commentSafe keeps text on one comment line.
func commentSafe(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }
