package protocol

import (
	"fmt"
	"strconv"
	"time"
)

// EmptyWindow explains why no chain can be injected: the window starts at
// the later of --from (fromFlag, zero when not given) and the trace's first
// recorded start + the warm-up, and ends at --until (untilFlag) or the
// trace's last submit, and here it does not start before it ends.
func EmptyWindow(fromFlag, untilFlag, first time.Time, warmup time.Duration, last time.Time) error {
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	from, fromWhy := first.Add(warmup), fmt.Sprintf("the trace's first start %s + the %s warm-up", stamp(first), fmtHours(warmup))
	if fromFlag.After(from) {
		from, fromWhy = fromFlag, "--from"
	}
	until, untilWhy := last, "the trace's last submit"
	if !untilFlag.IsZero() {
		until, untilWhy = untilFlag, "--until"
	}
	var fix string
	switch {
	case fromWhy == "--from" && untilWhy == "--until":
		fix = "give a --from before --until"
	case fromWhy == "--from":
		fix = fmt.Sprintf("give a --from before %s", stamp(until))
	case untilWhy == "--until":
		fix = fmt.Sprintf("give an --until after %s, or a shorter --warmup", stamp(from))
	default:
		fix = fmt.Sprintf("the trace spans %s from its first start to its last submit, no more than the warm-up: give a longer trace, or a shorter --warmup", fmtHours(last.Sub(first)))
	}
	return fmt.Errorf("%w: no chain can be injected: the evaluation window would start at %s (%s) and end at %s (%s); %s",
		ErrBadSetup, stamp(from), fromWhy, stamp(until), untilWhy, fix)
}

// fmtHours writes a duration in hours ("48h", "13.5h").
func fmtHours(d time.Duration) string {
	return strconv.FormatFloat(d.Hours(), 'f', -1, 64) + "h"
}
