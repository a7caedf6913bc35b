package slurm

import "testing"

// TestHandsOff: a script that runs mirage handoff (by name, path or
// $MIRAGE_BIN) is a training run; a comment, another word or another
// subcommand is not.
func TestHandsOff(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{"#!/bin/bash\nmirage handoff --signal USR1\npython train.py\n", true},
		{"#!/bin/bash\n\"$MIRAGE_BIN\" handoff\n", true},
		{"#!/bin/bash\n${MIRAGE_BIN} handoff || true\n", true},
		{"#!/bin/bash\n/opt/mirage/bin/mirage handoff;\n", true},
		{"#!/bin/bash\nif true; then mirage handoff; fi\n", true},
		{"#!/bin/bash\n# mirage handoff (disabled)\n", false},
		{"#!/bin/bash\nmirage status\necho handoff\n", false},
		{"#!/bin/bash\nnomirage handoff\n", false},
		{"#!/bin/bash\nmirage handoffs\n", false},
	} {
		if got := HandsOff([]byte(c.body)); got != c.want {
			t.Errorf("%q: %v; want %v", c.body, got, c.want)
		}
	}
}
