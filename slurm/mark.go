package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

// ErrMarkUnsupported is matched by MarkEnded's error where the Slurm
// release cannot change a job's comment without damaging it.
var ErrMarkUnsupported = errors.New("this Slurm cannot mark a job's comment")

// MarkEnded adds mark (a word: provisioner.EndMark) to the comment of the
// user's own job id, which has ended, in the accounting database
// (`sacctmgr -i modify job where jobid=ID set comment=...`): mirage cancel
// marks this way the last job of a chain it cancels between segments, so
// that recover, after the state database is lost, does not offer the
// chain again. Slurm lets a user change only their own jobs' comments. A
// job already marked is left as it is. submitted bounds the sacct window
// the current comment is read from.
//
// Before Slurm 23.02 sacctmgr wrote every comment it set in lower case
// (its changelog, 23.02.0rc1), which would break the comment's
// specification and MAC: there MarkEnded changes nothing and returns an
// error wrapping ErrMarkUnsupported.
func (c *Client) MarkEnded(ctx context.Context, id string, submitted time.Time, mark string) error {
	if err := validJobID(id); err != nil {
		return err
	}
	if mark == "" || strings.ContainsAny(mark, " ,;\t\n\r") {
		return fmt.Errorf("slurm: mark %q: want one word", mark)
	}
	v, err := c.SlurmVersion(ctx)
	if err != nil {
		return err
	}
	if v.Major*100+v.Minor < 2302 {
		return fmt.Errorf("job %s: %w: Slurm %s's sacctmgr writes comments in lower case (fixed in 23.02)", id, ErrMarkUnsupported, v.Release)
	}
	now := c.clock.Now()
	start := submitted.Add(-time.Hour)
	if submitted.IsZero() || !start.Before(now) {
		start = now.Add(-30 * 24 * time.Hour)
	}
	jobs, err := c.Accounting(ctx, AccountingQuery{Start: start, End: now, IDs: []string{id}, Users: []string{c.cfg.Self}})
	if err != nil && !errors.Is(err, provisioner.ErrIncomplete) {
		return err
	}
	var job *provisioner.Job
	for i := range jobs {
		if jobs[i].ID == id && jobs[i].User == c.cfg.Self {
			job = &jobs[i]
		}
	}
	switch {
	case job == nil:
		return fmt.Errorf("job %s: not in sacct since %s: %w", id, start.UTC().Format(time.RFC3339), provisioner.ErrNotFound)
	case !job.State.Finished():
		return fmt.Errorf("job %s is %s: only a job that has ended is marked", id, job.State)
	case strings.Contains(" "+job.Comment+" ", " "+mark+" "):
		return nil // marked already
	}
	comment := strings.TrimSpace(job.Comment)
	if comment != "" {
		comment += " "
	}
	comment += mark
	if len(comment) > provisioner.MaxComment || strings.ContainsAny(comment, "\n\r") {
		return fmt.Errorf("job %s: its comment (%d bytes) cannot take %s", id, len(job.Comment), mark)
	}
	// One argument: no shell, and sacctmgr splits it at its first '='.
	out, err := c.run(ctx, "sacctmgr", []string{"-i", "modify", "job", "where", "jobid=" + id, "set", "comment=" + comment}, runOpts{})
	if err != nil {
		return fmt.Errorf("job %s: sacctmgr modify job: %w", id, err)
	}
	if !strings.Contains(string(out), "Modified") {
		return fmt.Errorf("job %s: sacctmgr modified nothing: %q", id, strings.TrimSpace(string(out)))
	}
	return nil
}
