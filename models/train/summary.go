package train

import (
	"fmt"
	"io"
	"text/tabwriter"
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
