package main

import (
	"errors"
	"io/fs"

	"github.com/mirage-gpu/mirage/eval"
	"github.com/mirage-gpu/mirage/k8s"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/provisioner/placement"
	"github.com/mirage-gpu/mirage/provisioner/team"
	"github.com/mirage-gpu/mirage/traces"
)

// errCode is the exit code of the errors that wrap kind.
type errCode struct {
	kind error
	code int
}

// The exit codes of the libraries' error kinds, by the commands that meet them.
var (
	traceCodes = []errCode{{traces.ErrMalformed, exitBadInput}, {traces.ErrUnknownFormat, exitBadInput},
		{traces.ErrUnsupportedVersion, exitBadInput}, {traces.ErrNoJobs, exitBadInput},
		{fs.ErrNotExist, exitBadInput}, {fs.ErrPermission, exitBadInput}} // a trace that is not there, or not readable
	evalCodes = []errCode{{eval.ErrTrace, exitBadInput}, {eval.ErrBadSweep, exitBadInput}, {eval.ErrBadReport, exitBadInput},
		{eval.ErrBadSetup, exitUsage}}
	packCodes = append([]errCode{{eval.ErrPackInput, exitBadInput}}, traceCodes...)
	k8sCodes  = []errCode{{provisioner.ErrUnavailable, exitUnavailable}, {k8s.ErrUnknownTeam, exitBadInput},
		{provisioner.ErrRejected, exitRejected}}
	placeCodes = append([]errCode{{team.ErrUnknownTeam, exitBadInput}, {placement.ErrJobTooLarge, exitBadInput},
		{placement.ErrBadDemand, exitBadInput}, {team.ErrQuotaExceedsCluster, exitBadInput}, {team.ErrConfig, exitBadInput},
		{placement.ErrUnknownNode, exitBadInput}}, k8sCodes...)
)

// coded gives err the exit code of the first kind in codes it wraps; an
// error that already has an exit code keeps it.
func coded(err error, codes []errCode) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	for _, c := range codes {
		if errors.Is(err, c.kind) {
			return withCode(c.code, err)
		}
	}
	return err
}
