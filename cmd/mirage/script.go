package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/mirage-gpu/mirage/internal/cmdutil"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/internal/state"
	"github.com/mirage-gpu/mirage/provisioner"
	"github.com/mirage-gpu/mirage/slurm"
)

// A chain's job script, frozen at submit (issue #50). On Slurm, submit
// reads the script once, with the owner checks of safefile.ReadScript, and
// keeps a private copy in the state directory's scripts/ (safefile.Freeze)
// that every segment is submitted from: the Slurm client refuses any other
// script (slurm.Config.ScriptDir). What happens to the original afterwards
// is reported (Chain.ScriptSeen, a "script" event), never followed;
// mirage update adopts a new version. The daemon gives chains stored or
// recovered without a copy one, after the same checks (checkScripts).

// scriptsDir is the directory of the script copies in the state directory.
func scriptsDir(stateDir string) string { return filepath.Join(stateDir, "scripts") }

// copiesOf is the directory of script copies the backend submits from,
// or "" when it takes any script (Kubernetes runs the script from its
// image; the test backends).
func copiesOf(cl provisioner.Cluster) string {
	if c, ok := cl.(interface{ Config() slurm.Config }); ok {
		return c.Config().ScriptDir
	}
	return ""
}

// readScript reads a chain's script for submit or update
// (safefile.ReadScript), giving its refusals their exit codes: 6 for a
// file someone else could have chosen, 3 for one that is missing or not a
// script.
func readScript(path string) (abs string, content []byte, err error) {
	abs, content, err = safefile.ReadScript(path)
	if errors.Is(err, safefile.ErrNotOwned) {
		return "", nil, cmdutil.WithCode(cmdutil.ExitUnsafe, err)
	}
	if err != nil {
		return "", nil, cmdutil.WithCode(cmdutil.ExitBadInput, fmt.Errorf("%w (give a readable batch script)", err))
	}
	return abs, content, nil
}

// shortHash abbreviates a content hash for messages: "sha256:" and 12 hex digits.
func shortHash(h string) string {
	if n := len(safefile.HashPrefix) + 12; len(h) > n {
		return h[:n]
	}
	return h
}

// scriptReader reads originals with safefile.ReadScript, each path once
// (many chains may share a script; one daemon cycle reads each once).
type scriptReader map[string]scriptRead

// scriptRead is one ReadScript's outcome.
type scriptRead struct {
	abs     string
	content []byte
	err     error
}

func (r scriptReader) read(path string) (string, []byte, error) {
	got, ok := r[path]
	if !ok {
		got.abs, got.content, got.err = safefile.ReadScript(path)
		r[path] = got
	}
	return got.abs, got.content, got.err
}

// originalNote says what the file at ch.Script now is, measured against
// the chain's copy: "" when it holds the same script, else what changed
// (Chain.ScriptSeen).
func originalNote(ch *provisioner.Chain, r scriptReader) string {
	_, content, err := r.read(ch.Script)
	runs := fmt.Sprintf("segments run the private copy (%s)", shortHash(ch.ScriptHash))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s is gone; %s", ch.Script, runs)
	case err != nil:
		return fmt.Sprintf("ignored: %v; %s", err, runs)
	case safefile.Hash(content) != ch.ScriptHash:
		return fmt.Sprintf("%s changed since the copy was made (now %s); ignored: %s until `mirage update %s` adopts the new version",
			ch.Script, shortHash(safefile.Hash(content)), runs, ch.ID)
	}
	return ""
}

// refreshScript brings ch's copy up to date in copies (the directory the
// backend submits from), reading originals through r: a chain without one gets a copy of its script
// made after submit's checks; a copy that is gone or damaged is made again
// from an original with the same hash. It sets ch.ScriptSeen to what the
// original now is, or to why no segment can be submitted, and returns what
// it made, to be recorded ("" when nothing).
func refreshScript(ch *provisioner.Chain, copies string, r scriptReader) (made string) {
	if ch.ScriptCopy == "" {
		abs, content, err := r.read(ch.Script)
		if err == nil {
			err = slurm.ChainScript(&provisioner.Chain{Script: abs, Args: ch.Args}, content)
		}
		var path, hash string
		if err == nil {
			path, hash, err = safefile.Freeze(copies, content)
		}
		if err != nil {
			ch.ScriptSeen = fmt.Sprintf("held: the chain has no private copy of its script yet, and it cannot be made: %v; "+
				"no segment is submitted until the script passes submit's checks (the next cycle then makes the copy)", err)
			return ""
		}
		ch.ScriptCopy, ch.ScriptHash, ch.ScriptSeen = path, hash, ""
		return fmt.Sprintf("private copy of %s made (%s) after submit's checks: the chain was stored or recovered without one; every segment from now on is submitted from it",
			ch.Script, shortHash(hash))
	}
	if _, err := safefile.CheckFrozen(copies, ch.ScriptCopy); err != nil {
		_, content, rerr := r.read(ch.Script)
		if rerr == nil && safefile.Hash(content) == ch.ScriptHash {
			if path, _, ferr := safefile.Freeze(copies, content); ferr == nil {
				ch.ScriptCopy, ch.ScriptSeen = path, ""
				return fmt.Sprintf("private copy made again from the unchanged original (%s): %v", shortHash(ch.ScriptHash), err)
			}
		}
		ch.ScriptSeen = fmt.Sprintf("held: the private copy (%s) is unusable (%v) and %s no longer holds the same script; "+
			"no segment is submitted until `mirage update %s` adopts the script as it is now", shortHash(ch.ScriptHash), err, ch.Script, ch.ID)
		return ""
	}
	ch.ScriptSeen = originalNote(ch, r)
	return ""
}

// checkScripts runs before each daemon cycle, under its lock, where the
// backend submits only private copies (copies: their directory): it
// refreshes every active chain's copy (refreshScript) and, whenever that
// makes a copy or changes what is seen of the original, stores the chain
// with a "script" event and warns on out.
func checkScripts(ctx context.Context, st *state.Store, copies string, now time.Time, out io.Writer) error {
	chains, err := st.Chains(ctx, true)
	if err != nil {
		return err
	}
	r := scriptReader{}
	for i := range chains {
		ch := &chains[i]
		was := ch.ScriptSeen
		detail := refreshScript(ch, copies, r)
		switch {
		case detail == "" && ch.ScriptSeen == was:
			continue
		case detail == "" && ch.ScriptSeen == "":
			detail = fmt.Sprintf("%s holds the chain's script again (%s)", ch.Script, shortHash(ch.ScriptHash))
		case detail == "":
			detail = ch.ScriptSeen
		}
		err := st.InTx(ctx, func(tx provisioner.Store) error {
			if err := tx.PutChain(ctx, ch); err != nil {
				return err
			}
			return tx.(provisioner.EventStore).AddEvent(ctx, &provisioner.Event{Time: now, ChainID: ch.ID, Segment: -1, Kind: provisioner.EventScript, Detail: detail})
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "mirage: chain %s: %s\n", ch.ID, detail)
	}
	return nil
}

// pruneScripts removes the copies no active chain submits from any more
// (after a cycle, under the daemon lock, so no submit is between making a
// copy and registering its chain).
func pruneScripts(ctx context.Context, st *state.Store, copies string) error {
	chains, err := st.Chains(ctx, true)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for i := range chains {
		keep[chains[i].ScriptHash] = true
	}
	_, err = safefile.PruneFrozen(copies, keep)
	return err
}
