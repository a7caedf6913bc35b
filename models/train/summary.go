package train

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mirage-gpu/mirage/internal/term"
)

// Summary is what Run trained, in order; as JSON, the list of Trained.
type Summary []Trained

// WriteText prints the summary as a table: name, kind, rows, fit time, the
// headline validation figure and the directory.
func (s Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tROWS\tFIT\tVALIDATION\tDIR")
	for _, m := range s {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1fs\t%s\t%s\n", m.Name, m.Meta.Kind, m.Meta.TrainRows, m.Meta.TrainSeconds, m.Meta.Headline(), m.Dir)
	}
	return tw.Flush()
}

// Bar is a terminal progress bar as a Progress: one bar per stage, labelled
// with the stage.
type Bar struct{ *term.Progress }

// Update implements Progress.
func (b Bar) Update(label string, done, total int) {
	b.SetLabel(label)
	b.Progress.Update(done, total)
}

// Done implements Progress: the stage ended; clear the bar for the next.
func (b Bar) Done() {
	b.Progress.Done()
	b.Start("")
}
