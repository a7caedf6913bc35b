package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Confirm asks a yes/no question on out and reads the answer from in: true
// for "y" or "yes" (any case), false for anything else; an error when in
// gives no answer at all.
func Confirm(in io.Reader, out io.Writer, question string) (bool, error) {
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, fmt.Errorf("no answer: %w", err)
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// Watch draws a view every interval until ctx ends (Ctrl-C: not an error)
// or draw fails. On a terminal (clear) each frame replaces the last; else
// frames follow each other. Each frame starts with a line naming its time.
func Watch(ctx context.Context, out io.Writer, clear bool, every time.Duration, now func() time.Time,
	sleep func(context.Context, time.Duration) error, title string, draw func() error) error {
	for {
		if clear {
			fmt.Fprint(out, "\033[H\033[2J") // home, clear the screen
		}
		fmt.Fprintf(out, "%s, %s (every %s; Ctrl-C to stop)\n\n", title, now().Format(time.RFC3339), every)
		if err := draw(); err != nil {
			return err
		}
		if !clear {
			fmt.Fprintln(out)
		}
		if err := sleep(ctx, every); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
	}
}
