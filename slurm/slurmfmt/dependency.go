package slurmfmt

import (
	"fmt"
	"strings"
)

// After is one term of a job dependency: the kind ("afterany", "afterok",
// "afternotok", "after", "aftercorr", "afterburstbuffer") and the job ids it
// names, or "singleton" with none.
type After struct {
	Kind string
	Jobs []string
}

// Dependency is a job's dependency as sbatch --dependency takes it and
// squeue's Dependency shows it: terms joined by "," (all must hold). The
// "?" form (any must hold) is not supported. Nil is no dependency.
type Dependency []After

// AfterAny is the dependency on jobs ending, however they end.
func AfterAny(jobs ...string) Dependency {
	return Dependency{{Kind: "afterany", Jobs: jobs}}
}

// dependencyKinds are the kinds sbatch(1) --dependency names that wait for
// other jobs (after, afterany, afterburstbuffer, aftercorr, afternotok,
// afterok), besides singleton.
var dependencyKinds = map[string]bool{"after": true, "afterany": true, "afterburstbuffer": true, "aftercorr": true, "afternotok": true, "afterok": true}

// ParseDependency reads a dependency expression ("afterany:1:2,afterok:3",
// "singleton"; "" is none). A job id may carry squeue's "(unfulfilled)" or
// "(failed)" note, which is dropped, and "+TIME" of after/afterany, which is
// kept with the id.
func ParseDependency(s string) (Dependency, error) {
	if s == "" {
		return nil, nil
	}
	if strings.Contains(s, "?") {
		return nil, fmt.Errorf("dependency %q: the any-of form (?) is not supported", s)
	}
	var d Dependency
	for _, term := range strings.Split(s, ",") {
		if term == "singleton" {
			d = append(d, After{Kind: "singleton"})
			continue
		}
		kind, list, ok := strings.Cut(term, ":")
		if !ok || !dependencyKinds[kind] {
			return nil, fmt.Errorf("dependency %q: term %q: want KIND:JOB[:JOB...] with KIND one of after, afterany, afterok, afternotok, aftercorr, afterburstbuffer, or singleton", s, term)
		}
		a := After{Kind: kind}
		for _, id := range strings.Split(list, ":") {
			id, _, _ = strings.Cut(id, "(")
			if id == "" {
				return nil, fmt.Errorf("dependency %q: term %q names an empty job id", s, term)
			}
			a.Jobs = append(a.Jobs, id)
		}
		d = append(d, a)
	}
	return d, nil
}

// String renders the dependency for sbatch --dependency ("" for none).
func (d Dependency) String() string {
	parts := make([]string, len(d))
	for i, a := range d {
		parts[i] = a.Kind
		if len(a.Jobs) > 0 {
			parts[i] += ":" + strings.Join(a.Jobs, ":")
		}
	}
	return strings.Join(parts, ",")
}

// JobIDs lists the jobs the dependency waits for, in order, each once.
func (d Dependency) JobIDs() []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range d {
		for _, id := range a.Jobs {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// Set parses s into d (a command-line flag's value, as pflag.Value).
func (d *Dependency) Set(s string) error {
	v, err := ParseDependency(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Type names the flag value's kind in help texts (pflag.Value).
func (*Dependency) Type() string { return "dependency" }
