package slurmfmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrHostlist is wrapped by every error of ExpandHostlist.
var ErrHostlist = errors.New("bad hostlist")

// ExpandHostlist expands a Slurm hostlist into host names, in order, as
// `scontrol show hostnames` does (scontrol(1); syntax of Slurm's
// src/common/hostlist.c):
//
//   - entries are separated by commas outside brackets: "a,b[1-2]";
//   - a bracket holds a comma list of numbers and ranges LO-HI:
//     "node[1-3,07]" is node1 node2 node3 node07;
//   - a range keeps the zero padding of its lower bound: "n[01-10]" is
//     n01 … n10, "n[8-10]" is n8 n9 n10;
//   - text may follow a bracket and several brackets may appear in one entry,
//     expanding as a cross product, leftmost slowest:
//     "gpu[01-02]-r[1-2]" is gpu01-r1 gpu01-r2 gpu02-r1 gpu02-r2.
//
// Spaces around entries are dropped and empty entries skipped, so "" gives
// nil. Placeholders Slurm prints for "no nodes" ("(null)", "None assigned")
// are the caller's business. Unbalanced or nested brackets, a bound that is
// not a number, a range whose upper bound is below its lower one, and more
// than max names (max <= 0: no names allowed) are errors wrapping
// ErrHostlist; nothing is expanded past max, so a hostile "n[0-999999999]"
// costs nothing.
func ExpandHostlist(s string, max int) ([]string, error) {
	var out []string
	for _, part := range splitOutside(s, ',', '[', ']') {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		names, err := expandEntry(part, max-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", s, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// expandEntry expands one entry (no top-level comma) into at most budget names.
func expandEntry(p string, budget int) ([]string, error) {
	i := strings.IndexByte(p, '[')
	if i < 0 {
		if strings.IndexByte(p, ']') >= 0 {
			return nil, fmt.Errorf("%w: stray ']' in %q", ErrHostlist, p)
		}
		if budget < 1 {
			return nil, fmt.Errorf("%w: too many names", ErrHostlist)
		}
		return []string{p}, nil
	}
	j := strings.IndexByte(p[i:], ']')
	if j < 0 {
		return nil, fmt.Errorf("%w: unclosed '[' in %q", ErrHostlist, p)
	}
	prefix, body, rest := p[:i], p[i+1:i+j], p[i+j+1:]
	if strings.IndexByte(prefix, ']') >= 0 || strings.IndexByte(body, '[') >= 0 {
		return nil, fmt.Errorf("%w: nested brackets in %q", ErrHostlist, p)
	}
	tails := []string{""}
	if rest != "" {
		var err error
		if tails, err = expandEntry(rest, budget); err != nil {
			return nil, err
		}
	}
	var out []string
	for r := range strings.SplitSeq(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, okA := bound(lo)
		b := a
		okB := true
		if isRange {
			b, okB = bound(hi)
		}
		if !okA || !okB || b < a {
			return nil, fmt.Errorf("%w: bad range %q in %q", ErrHostlist, r, p)
		}
		if b-a >= budget || (b-a+1)*len(tails) > budget-len(out) {
			return nil, fmt.Errorf("%w: too many names", ErrHostlist)
		}
		for n := a; n <= b; n++ {
			num := strconv.Itoa(n)
			if pad := len(lo) - len(num); pad > 0 {
				num = strings.Repeat("0", pad) + num
			}
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}

// bound reads a range bound: 1 to 9 decimal digits.
func bound(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// splitOutside splits s on sep where it is not inside open/close brackets;
// "" gives nil.
func splitOutside(s string, sep, open, close byte) []string {
	if s == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			if depth > 0 {
				depth--
			}
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
