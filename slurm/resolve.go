package slurm

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/provisioner"
)

// Errors of Options.Resolve, for callers that map them (the CLI: exit 2
// and 3). The errors keep their own messages and match these with
// errors.Is.
var (
	ErrBadOption = errors.New("bad Slurm option")      // a value that makes no sense (a usage error)
	ErrNotFound  = errors.New("slurm files not found") // a slurm.conf or command directory that is not there
)

// optionError tags err with one of the errors above.
type optionError struct {
	kind error
	err  error
}

func (e *optionError) Error() string        { return e.err.Error() }
func (e *optionError) Unwrap() error        { return e.err }
func (e *optionError) Is(target error) bool { return target == e.kind }

// Resolve checks the options of a long-lived client (the chain commands)
// and makes them absolute: a positive Timeout, SlurmConf from SLURM_CONF
// (through Getenv) when empty, and both SlurmConf and Bin existing. The
// messages name the CLI flags (--slurm-timeout, --slurm-conf, --slurm-bin).
func (o Options) Resolve() (Options, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Timeout <= 0 {
		return o, &optionError{ErrBadOption, fmt.Errorf("--slurm-timeout %s: want a positive duration", o.Timeout)}
	}
	if o.SlurmConf == "" {
		o.SlurmConf = getenv("SLURM_CONF")
	}
	if conf := o.SlurmConf; conf != "" {
		abs, err := filepath.Abs(conf)
		if err != nil {
			return o, &optionError{ErrBadOption, fmt.Errorf("--slurm-conf %s: %w", conf, err)}
		}
		if _, err := os.Stat(abs); err != nil {
			return o, &optionError{ErrNotFound, fmt.Errorf("slurm.conf %s: %w (give the cluster's configuration with --slurm-conf or SLURM_CONF)", abs, err)}
		}
		o.SlurmConf = abs
	}
	if bin := o.Bin; bin != "" {
		dir, err := filepath.Abs(bin)
		if err != nil {
			return o, &optionError{ErrBadOption, fmt.Errorf("--slurm-bin %s: %w", bin, err)}
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return o, &optionError{ErrNotFound, fmt.Errorf("--slurm-bin %s: not a directory", bin)}
		}
		o.Bin = dir
	}
	return o, nil
}

// ErrBadScript marks a batch script or sbatch options ReadShape cannot use
// (bad input).
var ErrBadScript = errors.New("bad batch script")

// scriptShape reads a chain's shape: the #SBATCH lines of content, the
// batch script at path, overridden by the sbatch options args.
func scriptShape(path string, content []byte, args []string) (Shape, error) {
	bad := func(err error) (Shape, error) { return Shape{}, &optionError{ErrBadScript, err} }
	fromScript, err := ParseBatchScript(bytes.NewReader(content))
	if err != nil {
		return bad(fmt.Errorf("script %s: %w", path, err))
	}
	fromArgs, err := ParseSbatchArgs(args)
	if err != nil {
		return bad(fmt.Errorf("sbatch options: %w", err))
	}
	return fromScript.Merge(fromArgs), nil
}

// ChainScript fills a chain's shape from content, the batch script at
// ch.Script (an absolute path; safefile.ReadScript reads both), and its
// sbatch options: account, partition, time limit, nodes, GPUs, the
// --signal lead, the job name when the chain has none (-J, else the
// script's name), and the workload of a script that runs mirage handoff. A
// chain needs a time limit to know when each successor is due, so a script
// without one is refused (ErrBadScript), with the line to add.
func ChainScript(ch *provisioner.Chain, content []byte) error {
	sh, err := scriptShape(ch.Script, content, ch.Args)
	if err != nil {
		return err
	}
	if sh.TimeLimit <= 0 {
		what := "sets no time limit"
		if sh.Unlimited {
			what = "asks for no time limit (UNLIMITED)"
		}
		return &optionError{ErrBadScript, fmt.Errorf("script %s %s: a chain needs one to know when each successor is due; add \"#SBATCH --time=24:00:00\" to the script, or give it after \"--\": mirage submit %s -- --time=24:00:00", ch.Script, what, ch.Script)}
	}
	ch.Name = cmp.Or(ch.Name, sh.Name, filepath.Base(ch.Script))
	ch.Account, ch.Partition, ch.TimeLimit, ch.Nodes, ch.GPUs = sh.Account, sh.Partition, sh.TimeLimit, sh.Nodes, sh.GPUs()
	ch.SignalLead = sh.Signal.Lead // 0 without --signal
	if ch.Workload == "" {
		switch handsOff := HandsOff(content); {
		case ch.Cost != nil: // explicit weights: an early start still costs a checkpoint, not hours held twice
			ch.Cost.HandOff = handsOff
		case handsOff: // a training run that checkpoints when its successor starts
			ch.Workload = provisioner.WorkloadTraining
		}
	}
	return nil
}

// handOffLine matches a script line that runs mirage handoff (by name, path
// or $MIRAGE_BIN).
var handOffLine = regexp.MustCompile(`(^|[\s;&|(/"'])(mirage|\$\{?MIRAGE_BIN\}?)["']?\s+handoff(\s|$|;)`)

// HandsOff reports whether the batch script content runs mirage handoff
// on a line that is not a comment: its chain is then a training run, whose
// hand-offs cost a checkpoint and a restart (provisioner.WorkloadTraining).
func HandsOff(content []byte) bool {
	for _, line := range strings.Split(string(content), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && handOffLine.MatchString(l) {
			return true
		}
	}
	return false
}

// CheckRecovered applies the checks of mirage submit to a chain spec read
// back from a job comment, which may name any path: a batch script the user
// owns, that nobody else may write or replace (safefile.ReadScript), whose
// options parse and give a time limit (ChainScript), a policy among
// policies, and a known workload or usable cost weights (Chain.CheckCost).
func CheckRecovered(c *provisioner.Chain, policies []string) error {
	abs, content, err := safefile.ReadScript(c.Script)
	if err != nil {
		return err
	}
	if err := ChainScript(&provisioner.Chain{Script: abs, Args: c.Args}, content); err != nil {
		return err
	}
	if !slices.Contains(policies, c.Policy) {
		return fmt.Errorf("unknown policy %q", c.Policy)
	}
	return c.CheckCost()
}
