package slurm

import (
	"errors"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

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

// TestChainScriptSignalLead: the chain's signal lead is the sig_time of
// --signal, from the script's #SBATCH lines or, winning over them, the
// options after --; 0 without --signal (sbatch sends none).
func TestChainScriptSignalLead(t *testing.T) {
	with := []byte("#!/bin/bash\n#SBATCH -t 3\n#SBATCH --signal=B:USR1@40\nsleep 1\n")
	without := []byte("#!/bin/bash\n#SBATCH -t 3\nsleep 1\n")
	for _, c := range []struct {
		script []byte
		args   []string
		want   time.Duration
	}{
		{with, nil, 40 * time.Second},
		{with, []string{"--signal=B:USR1@90"}, 90 * time.Second},
		{without, []string{"--signal", "USR1"}, time.Minute}, // sbatch's default sig_time
		{without, nil, 0},
	} {
		ch := provisioner.Chain{Script: "/home/u/train.sbatch", Args: c.args}
		if err := ChainScript(&ch, c.script); err != nil || ch.SignalLead != c.want {
			t.Errorf("%q %q: signal lead %s, %v; want %s", c.script, c.args, ch.SignalLead, err, c.want)
		}
	}
	ch := provisioner.Chain{Script: "/home/u/train.sbatch", Args: []string{"--signal=B:NOPE"}}
	if err := ChainScript(&ch, with); !errors.Is(err, ErrBadScript) {
		t.Errorf("a bad --signal: %v, want ErrBadScript", err)
	}
}
