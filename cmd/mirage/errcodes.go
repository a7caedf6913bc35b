package main

import (
	"errors"
	"fmt"
	"github.com/mirage-gpu/mirage/eval/protocol"
	"github.com/mirage-gpu/mirage/eval/report"
	"io/fs"
	"slices"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/eval/pack"
	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/train"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/chainops"
	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/provisioner/team"
	"github.com/mirage-gpu/mirage/slurm"
	"github.com/mirage-gpu/mirage/traces"
)

// The exit codes of the libraries' error kinds, by the commands that meet them.
var (
	traceCodes = append(cmdutil.Kinds(cmdutil.ExitBadInput, traces.ErrMalformed, traces.ErrUnknownFormat, traces.ErrUnsupportedVersion,
		traces.ErrNoJobs, fs.ErrNotExist, fs.ErrPermission), // a trace that is not there, or not readable
		cmdutil.Kinds(cmdutil.ExitUsage, traces.ErrBadZone)...)
	evalCodes = append(cmdutil.Kinds(cmdutil.ExitBadInput, eval.ErrTrace, eval.ErrBadSweep, report.ErrBad, models.ErrNoModel, features.ErrSchemaMismatch),
		cmdutil.Kinds(cmdutil.ExitUsage, protocol.ErrBadSetup)...)
	packCodes = append(cmdutil.Kinds(cmdutil.ExitBadInput, pack.ErrInput), traceCodes...)
	k8sCodes  = slices.Concat(cmdutil.Kinds(cmdutil.ExitUnavailable, provisioner.ErrUnavailable),
		cmdutil.Kinds(cmdutil.ExitBadInput, k8s.ErrUnknownTeam), cmdutil.Kinds(cmdutil.ExitRejected, provisioner.ErrRejected))
	placeCodes = append(cmdutil.Kinds(cmdutil.ExitBadInput, team.ErrUnknownTeam, placement.ErrJobTooLarge, placement.ErrBadDemand,
		team.ErrQuotaExceedsCluster, team.ErrConfig, placement.ErrUnknownNode), k8sCodes...)
	trainCodes = slices.Concat(cmdutil.Kinds(cmdutil.ExitUsage, train.ErrSpec), cmdutil.Kinds(cmdutil.ExitBadInput, train.ErrInput),
		cmdutil.Kinds(cmdutil.ExitUnavailable, train.ErrOutput))
	// stateCodes: the state directory, the backends and the chain engine.
	stateCodes = slices.Concat(cmdutil.Kinds(cmdutil.ExitUsage, state.ErrBadDir, state.ErrBadMark, slurm.ErrBadOption, chainops.ErrNeedsOptions),
		cmdutil.Kinds(cmdutil.ExitBadInput, slurm.ErrNotFound, chainops.ErrRefused),
		cmdutil.Kinds(cmdutil.ExitUnavailable, state.ErrCorrupt, state.ErrLocked, state.ErrTooNew, provisioner.ErrUnavailable,
			state.ErrHeld, state.ErrNoDir, provisioner.ErrImplausibleView),
		cmdutil.Kinds(cmdutil.ExitUnsafe, state.ErrUnsafe, provisioner.ErrForeignJob, safefile.ErrNotOwned, slurm.ErrNoUser),
		cmdutil.Kinds(cmdutil.ExitRejected, provisioner.ErrRejected))
)

// stateErr gives the errors of the chain commands their exit codes.
func stateErr(err error) error {
	if errors.Is(err, provisioner.ErrChainNotFound) && !errors.As(err, new(*cmdutil.ExitError)) {
		return cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("%w (list chains with mirage status)", err))
	}
	return cmdutil.Coded(err, stateCodes)
}

// policyErr codes the error of a policy that cannot be built: its model
// missing or of another feature schema is bad input (3), as any input file
// that is not there; anything else (an unknown name, the oracle outside
// mirage eval) is a bad --policy (2).
func policyErr(err error) error {
	if errors.Is(err, models.ErrNoModel) || errors.Is(err, features.ErrSchemaMismatch) {
		return cmdutil.WithCode(cmdutil.ExitBadInput, err)
	}
	return cmdutil.WithCode(cmdutil.ExitUsage, err)
}
