package provisioner

import (
	"context"
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
