package slurmfmt

import (
	"errors"
	"fmt"
	"strings"
)

// ErrGRES is wrapped by every error of GPUsFromGRES and GPUsFromTRES.
var ErrGRES = errors.New("bad GRES/TRES")

// GPUsFromGRES counts the GPUs of a GRES string as slurm.conf(5) Gres=,
// sbatch(1) --gres and squeue/sinfo/scontrol print it: comma-separated
// entries NAME[:TYPE][:COUNT], COUNT defaulting to 1 ("Gres=gpu:tesla:1";
// "--gres=gpu:2"). Only entries named gpu count; they are summed
// ("gpu:a100:2,gpu:v100:1" is 3). Also read:
//
//   - a "gres:" or "gres/" prefix ("gres:gpu:2", "gres/gpu:2"), and '='
//     before the count ("gres/gpu=2", "gres/gpu:a100=2"), as squeue's
//     tres-per-node columns print them;
//   - a parenthesised suffix, which may hold commas ("gpu:a100:2(IDX:0-1)",
//     "gpu:4(S:0,1)"), as sinfo and scontrol -d print bindings; it is ignored.
//
// typ is the type of the last typed entry with GPUs ("" when none is typed).
// A gpu entry that does not parse (a count that is not a number, too many
// fields) is an error wrapping ErrGRES; total and typ then still hold what the
// other entries gave, for callers that read leniently.
func GPUsFromGRES(s string) (total int, typ string, err error) {
	for _, e := range splitOutside(s, ',', '(', ')') {
		e = strings.TrimSpace(e)
		if i := strings.IndexByte(e, '('); i >= 0 {
			e = e[:i]
		}
		e = strings.TrimPrefix(strings.TrimPrefix(e, "gres:"), "gres/")
		name, rest, hasRest := cutAny(e, ":=")
		if name != "gpu" {
			continue
		}
		n, t, ok := 1, "", true
		if hasRest {
			// rest is TYPE, COUNT, or TYPE:COUNT / TYPE=COUNT.
			if a, b, two := cutAny(rest, ":="); two {
				t = a
				n, ok = count(b)
				ok = ok && a != "" && !strings.ContainsAny(b, ":=")
			} else if c, isNum := count(rest); isNum {
				n = c
			} else {
				t = rest
				ok = rest != "" && strings.IndexFunc(rest, isDigitOrSign) != 0
			}
		}
		if !ok {
			if err == nil {
				err = fmt.Errorf("%w: GPU entry %q: want gpu[:TYPE][:COUNT] with a GPU count of 0 or more", ErrGRES, e)
			}
			continue
		}
		total += n
		if t != "" && n > 0 {
			typ = t
		}
	}
	return total, typ, err
}

// GPUsFromTRES counts the GPUs of a TRES string as sacct(1) AllocTRES and
// ReqTRES and squeue print it: comma-separated KEY=VALUE entries such as
// "cpu=8,mem=64G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4". Slurm lists a
// typed GPU count (gres/gpu:TYPE) as well as the untyped total (gres/gpu),
// so the untyped entry is the total when present and the typed entries are
// not added to it; without one, the typed entries are summed. typ is the
// type of the last typed entry. An entry without '=' or a GPU value that is
// not a non-negative integer is an error wrapping ErrGRES, with total and typ
// still holding what the other entries gave.
func GPUsFromTRES(s string) (total int, typ string, err error) {
	untyped, typed, hasUntyped := 0, 0, false
	for _, e := range strings.Split(s, ",") {
		k, v, found := strings.Cut(strings.TrimSpace(e), "=")
		if !found {
			if err == nil {
				err = fmt.Errorf("%w: TRES entry %q: want KEY=VALUE", ErrGRES, e)
			}
			continue
		}
		t, isTyped := strings.CutPrefix(k, "gres/gpu:")
		if k != "gres/gpu" && !isTyped {
			continue
		}
		n, ok := count(v)
		if !ok {
			if err == nil {
				err = fmt.Errorf("%w: TRES entry %q: want a GPU count", ErrGRES, e)
			}
			continue
		}
		if isTyped {
			typed += n
			if t != "" {
				typ = t
			}
		} else {
			untyped, hasUntyped = n, true
		}
	}
	if hasUntyped {
		return untyped, typ, err
	}
	return typed, typ, err
}

// count reads a non-negative decimal count of at most 9 digits.
func count(s string) (int, bool) {
	n, ok := bound(s)
	return n, ok
}

// cutAny cuts s around the first byte of seps.
func cutAny(s, seps string) (before, after string, found bool) {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

func isDigitOrSign(r rune) bool { return r >= '0' && r <= '9' || r == '-' || r == '+' }
