package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// DaemonOptions configure Daemon.
type DaemonOptions struct {
	Once      bool                                             // run one cycle and return its error
	Interval  time.Duration                                    // time between cycles
	MaxCycles int                                              // stop after this many cycles (0: until ctx ends)
	Sleep     func(ctx context.Context, d time.Duration) error // waiting between cycles
	Log       *slog.Logger                                     // failed cycles (nil: slog.Default())
}

// Daemon runs cycle, then every Interval another, until ctx ends (while
// waiting between cycles) or MaxCycles have run. A failed cycle is logged
// and the next one tries again; with Once the one cycle's error is returned.
// cycle is one locked Engine.Cycle with its report, as the caller does it.
func Daemon(ctx context.Context, o DaemonOptions, cycle func(ctx context.Context) error) error {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	for n := 1; ; n++ {
		err := cycle(ctx)
		if o.Once {
			return err
		}
		if err != nil {
			log.Error("daemon cycle failed; trying again next cycle", "err", err)
		}
		if o.MaxCycles > 0 && n >= o.MaxCycles {
			return nil
		}
		if err := o.Sleep(ctx, o.Interval); err != nil {
			return nil // signalled: stop between cycles
		}
	}
}

// CycleOutput is where LockedCycle prints each cycle's report.
type CycleOutput struct {
	Out  io.Writer
	JSON bool   // print CycleJSON documents, else the reports' text
	Lock string // the lock's name, for the message when another daemon holds it
}

// LockedCycle is one daemon cycle of e: it takes the lock with lock, runs
// Engine.Cycle and prints its report. When lock fails with an error
// matching held, another daemon is acting: it says so and returns nil.
// Other lock errors are returned as they are; the cycle's own error is
// returned after its report.
func LockedCycle(ctx context.Context, e *Engine, lock func() (unlock func() error, err error), held error, o CycleOutput) error {
	unlock, err := lock()
	if errors.Is(err, held) {
		if o.JSON {
			return writeJSON(o.Out, CycleJSON{Time: e.Clock.Now(), Acted: false, Error: err.Error()})
		}
		_, werr := fmt.Fprintf(o.Out, "another mirage daemon holds the lock %s: not acting this time\n", o.Lock)
		return werr
	}
	if err != nil {
		return err
	}
	defer unlock()
	e.fault("after-lock")
	rep, cerr := e.Cycle(ctx)
	if o.JSON {
		if err := writeJSON(o.Out, rep.JSON(cerr)); err != nil {
			return err
		}
	} else {
		_ = rep.WriteText(o.Out)
	}
	return cerr
}

// writeJSON prints v as indented JSON, as the CLI prints every document.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
