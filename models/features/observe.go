package features

import (
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// WaitObservation frames a job shape as the observation the schema expects:
// the job is the successor and there is no predecessor.
func WaitObservation(now time.Time, snap *provisioner.Snapshot, history []provisioner.Job, job provisioner.SubmitRequest) *provisioner.Observation {
	return provisioner.Observe(now, snap, history, nil, nil, job, nil)
}
