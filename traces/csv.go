package traces

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"github.com/mirage-gpu/mirage/internal/safefile"
	"io"
	"os"
	"strconv"
	"time"
)

// CSVHeader is the header row of mirage's canonical CSV: one column per Job
// field. Times are RFC 3339 with their offset (empty when unknown);
// time_limit_s is seconds.
var CSVHeader = []string{"id", "name", "user", "account", "partition", "submit", "eligible", "start", "end",
	"time_limit_s", "nodes", "gpus", "gpu_milli", "gpu_type", "cpus", "state", "exit_code", "signal", "priority"}

const csvHeaderPrefix = "id,name,user,account,partition,submit"

// CSVWriter writes jobs as canonical CSV to a stream.
type CSVWriter struct {
	w      *csv.Writer
	header bool
	rec    []string
}

// NewCSVWriter returns a writer of canonical CSV on w; call Flush at the end.
func NewCSVWriter(w io.Writer) *CSVWriter {
	return &CSVWriter{w: csv.NewWriter(w), rec: make([]string, len(CSVHeader))}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// Write writes one job (and the header before the first).
func (c *CSVWriter) Write(j Job) error {
	if !c.header {
		c.header = true
		if err := c.w.Write(CSVHeader); err != nil {
			return err
		}
	}
	r := c.rec
	r[0], r[1], r[2], r[3], r[4] = j.ID, j.Name, j.User, j.Account, j.Partition
	r[5], r[6], r[7], r[8] = fmtTime(j.Submit), fmtTime(j.Eligible), fmtTime(j.Start), fmtTime(j.End)
	r[9] = strconv.FormatInt(int64(j.TimeLimit/time.Second), 10)
	r[10], r[11], r[12] = strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), strconv.Itoa(j.GPUMilli)
	r[13], r[14], r[15] = j.GPUType, strconv.Itoa(j.CPUs), string(j.State)
	r[16], r[17], r[18] = strconv.Itoa(j.ExitCode), strconv.Itoa(j.Signal), strconv.FormatInt(j.Priority, 10)
	return c.w.Write(r)
}

// Flush writes buffered data (and the header, if no job was written).
func (c *CSVWriter) Flush() error {
	if !c.header {
		c.header = true
		if err := c.w.Write(CSVHeader); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

// WriteJobs writes jobs in format FormatLS6 (the LS6 export, WriteLS6) or
// FormatCSV (canonical CSV); other formats are ErrUnknownFormat.
func WriteJobs(w io.Writer, format Format, jobs []Job) error {
	switch format {
	case FormatLS6:
		return WriteLS6(w, jobs)
	case FormatCSV:
		cw := NewCSVWriter(w)
		for _, j := range jobs {
			if err := cw.Write(j); err != nil {
				return err
			}
		}
		return cw.Flush()
	}
	return fmt.Errorf("%w: cannot write %q", ErrUnknownFormat, format)
}

// Convert reads every job of r and writes canonical CSV to path atomically;
// it returns the number of jobs written. On any error (including a malformed
// row without SkipBad) nothing is written.
func Convert(r Reader, path string) (int, error) {
	n := 0
	err := safefile.WriteFile(path, 0o644, func(w io.Writer) error {
		cw := NewCSVWriter(w)
		for {
			j, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if err := cw.Write(j); err != nil {
				return err
			}
			n++
		}
		return cw.Flush()
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// canonical CSV reader: the inverse of CSVWriter.
func newCSVReader(lr lineReader) (Reader, error) {
	r := newCSVJobReader(lr, FormatCSV, []string{"id", "submit", "start", "end"})
	in := interner{}
	r.parse = func(rec []string, j *Job) (bool, *ParseError) {
		g := func(name string) string { s, _ := r.get(rec, name); return s }
		j.ID, j.Name = g("id"), g("name")
		j.User = in.get([]byte(g("user")))
		j.Account = in.get([]byte(g("account")))
		j.Partition = in.get([]byte(g("partition")))
		j.GPUType = in.get([]byte(g("gpu_type")))
		j.State = State(in.get([]byte(g("state"))))
		for _, p := range []struct {
			name string
			dst  *time.Time
		}{{"submit", &j.Submit}, {"eligible", &j.Eligible}, {"start", &j.Start}, {"end", &j.End}} {
			s := g(p.name)
			if s == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return false, perrS(p.name, "an RFC 3339 time", s)
			}
			*p.dst = t
		}
		for _, p := range []struct {
			name string
			dst  *int
		}{{"nodes", &j.Nodes}, {"gpus", &j.GPUs}, {"gpu_milli", &j.GPUMilli}, {"cpus", &j.CPUs}, {"exit_code", &j.ExitCode}, {"signal", &j.Signal}} {
			s := g(p.name)
			if s == "" {
				continue
			}
			v, err := strconv.Atoi(s)
			if err != nil {
				return false, perrS(p.name, "an integer", s)
			}
			if v < 0 && p.name != "exit_code" && p.name != "signal" {
				return false, perrS(p.name, "a non-negative integer", s)
			}
			*p.dst = v
		}
		if j.GPUMilli >= 1000 {
			return false, perrS("gpu_milli", "thousandths of one GPU (0-999)", g("gpu_milli"))
		}
		if s := g("time_limit_s"); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 {
				return false, perrS("time_limit_s", "non-negative seconds", s)
			}
			j.TimeLimit = time.Duration(v) * time.Second
		}
		if s := g("priority"); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return false, perrS("priority", "an integer", s)
			}
			j.Priority = v
		}
		return true, nil
	}
	return r, nil
}

// gzipFile closes both the gzip stream and the file.
type gzipFile struct {
	io.Reader
	gz *gzip.Reader
	f  *os.File
}

func (g *gzipFile) Close() error {
	if g.gz != nil {
		g.gz.Close()
	}
	return g.f.Close()
}

// openMaybeGzip opens path, gunzipping when it starts with the gzip magic.
func openMaybeGzip(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	src, err := decompress(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	gz, _ := src.(*gzip.Reader)
	return &gzipFile{Reader: src, gz: gz, f: f}, nil
}
