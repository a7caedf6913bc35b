package term

import (
	"fmt"
	"io"
	"os"
	"strings"

	xterm "golang.org/x/term"
)

// IsTerminal reports whether stream is an *os.File open on a terminal, the
// condition for drawing progress on it or asking on it. A character
// device is not enough: /dev/null is one (cron's and nohup's stdin).
func IsTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	if !ok || f == nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	is := false
	if err := rc.Control(func(fd uintptr) { is = xterm.IsTerminal(int(fd)) }); err != nil {
		return false
	}
	return is
}

// Progress is a one-line progress bar, redrawn in place with a carriage
// return whenever its whole percentage changes:
//
//	[##########...............]  40% label (done/total)
//
// A nil Progress, or one without a writer, draws nothing.
type Progress struct {
	w     io.Writer
	label string
	last  int
	drawn bool
}

// NewProgress returns a bar drawing on w (nil: a bar that draws nothing).
func NewProgress(w io.Writer, label string) *Progress {
	return &Progress{w: w, label: label, last: -1}
}

// Start begins a new bar with label, as for a new stage of work.
func (p *Progress) Start(label string) {
	if p != nil {
		p.label, p.last, p.drawn = label, -1, false
	}
}

// SetLabel changes the text after the percentage from the next redraw on.
func (p *Progress) SetLabel(label string) {
	if p != nil {
		p.label = label
	}
}

// Update draws done of total, followed by the label and the counts.
func (p *Progress) Update(done, total int) {
	if p == nil || p.w == nil || total <= 0 {
		return
	}
	p.draw(100*done/total, fmt.Sprintf("%s (%d/%d)", p.label, done, total))
}

// Fraction draws a share in [0, 1] (clamped), followed by note instead of
// the label: for progress that is not a count, such as simulated time.
func (p *Progress) Fraction(f float64, note string) {
	if p == nil || p.w == nil {
		return
	}
	p.draw(int(100*f), note)
}

func (p *Progress) draw(pct int, text string) {
	pct = min(max(pct, 0), 100)
	if pct == p.last && p.drawn {
		return
	}
	p.last, p.drawn = pct, true
	n := pct / 4
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %s\033[K", strings.Repeat("#", n), strings.Repeat(".", 25-n), pct, text)
}

// Done erases the bar, if it was drawn.
func (p *Progress) Done() {
	if p != nil && p.w != nil && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
