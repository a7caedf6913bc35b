package traces

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"time"
	_ "time/tzdata" // LS6 times are US/Central; do not depend on the host's zoneinfo
)

// Format names a trace format.
type Format string

// Formats Open understands. FormatAuto sniffs the content.
const (
	FormatAuto       Format = ""
	FormatLS6        Format = "ls6"            // TACC LS6 sacct export (count line, fixed-width header, dashes, TAB rows)
	FormatParsable   Format = "sacct-parsable" // sacct --parsable2 ('|' separated, header row)
	FormatSacctJSON  Format = "sacct-json"     // sacct --json (Slurm 22.05 … 25.x)
	FormatSWF        Format = "swf"            // Standard Workload Format (Parallel Workloads Archive)
	FormatOpenB      Format = "openb"          // Alibaba PAI 2023 openb pod list
	FormatOpenBNodes Format = "openb-nodes"    // Alibaba PAI 2023 openb node list (read with OpenNodes)
	FormatHelios     Format = "helios"         // Helios (SenseTime) cluster_log.csv job log
	FormatCSV        Format = "csv"            // mirage's canonical CSV (WriteCSV)
)

// Formats lists every format name accepted by Options.Format, for help texts.
var Formats = []Format{FormatLS6, FormatParsable, FormatSacctJSON, FormatSWF, FormatOpenB, FormatHelios, FormatCSV}

// ErrMalformed is matched (errors.Is) by every *ParseError.
var ErrMalformed = errors.New("malformed trace row")

// ErrUnknownFormat is returned by Open when the format cannot be recognised
// or Options.Format names no known format.
var ErrUnknownFormat = errors.New("unknown trace format")

// ErrBadZone marks an Options.Zone that is not a known IANA zone.
var ErrBadZone = errors.New("unknown time zone")

// ParseError describes one malformed row: where it is, which field, what was
// expected and what was found.
type ParseError struct {
	File  string // file name as given to Open (or the name given to NewReader)
	Line  int    // 1-based line number (for JSON: the job's index in the jobs array, 1-based)
	Field string // field (column) name
	Want  string // what was expected
	Got   string // what was found (truncated)

	fatal bool // a header error: the file as a whole is unreadable, SkipBad or not
}

// Error formats the error as "FILE:LINE: field F: want W, got G".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: field %s: want %s, got %q", e.File, e.Line, e.Field, e.Want, e.Got)
}

// Is makes errors.Is(err, ErrMalformed) true for every ParseError.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

// maxGot bounds ParseError.Got.
const maxGot = 60

// perr builds a ParseError for field f (File and Line are filled in by the reader).
func perr(field, want string, got []byte) *ParseError {
	if len(got) > maxGot {
		got = append(append([]byte(nil), got[:maxGot]...), "..."...)
	}
	return &ParseError{Field: field, Want: want, Got: string(got)}
}

// fatal marks pe as a header error that SkipBad does not skip.
func fatal(pe *ParseError) *ParseError {
	pe.fatal = true
	return pe
}

// Options control Open and NewReader.
type Options struct {
	// Format overrides content sniffing when not FormatAuto.
	Format Format
	// SkipBad skips malformed rows, counting them (Reader.Skipped) and keeping
	// the first few errors (Reader.Errors), instead of failing on the first.
	SkipBad bool
	// Location is the zone of zone-less timestamps. Nil means the format's
	// default: America/Chicago (US Central) for FormatLS6, UTC for the others.
	Location *time.Location
	// Zone names Location as an IANA zone ("America/Chicago"), for callers
	// holding a name (the --tz flag); used when Location is nil.
	Zone string
	// Epoch anchors formats with relative times (openb seconds since trace
	// start; SWF without an UnixStartTime header). Zero means the Unix epoch.
	Epoch time.Time
	// MaxLine caps the length of one line of a line-based format (every
	// format but sacct --json), so that a hostile or broken file cannot
	// exhaust memory: a longer line is an error wrapping ErrLineTooLong that
	// names the limit and the line. 0 means DefaultMaxLine.
	MaxLine int
}

// DefaultMaxLine is the default Options.MaxLine: 16 MiB, far beyond any
// real job record.
const DefaultMaxLine = 16 << 20

// ErrLineTooLong is matched (errors.Is) by the error for a line longer
// than Options.MaxLine. It is fatal, SkipBad or not.
var ErrLineTooLong = errors.New("line too long")

// MaxKeptErrors is how many malformed-row errors a Reader keeps with SkipBad.
const MaxKeptErrors = 10

// Reader streams jobs from a trace.
type Reader interface {
	// Next returns the next job, io.EOF at the end, or an error (a
	// *ParseError for a malformed row unless SkipBad is set).
	Next() (Job, error)
	// Format is the format being read.
	Format() Format
	// Skipped is the number of malformed rows skipped so far (SkipBad).
	Skipped() int
	// Errors returns the first MaxKeptErrors skipped-row errors.
	Errors() []error
	// Close releases the underlying file.
	Close() error
}

// All adapts a Reader to a range-over-func iterator. Iteration stops after
// the first error (which is yielded); io.EOF is not yielded.
func All(r Reader) iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for {
			j, err := r.Next()
			if err == io.EOF {
				return
			}
			if !yield(j, err) || err != nil {
				return
			}
		}
	}
}

// US Central, the zone of the LS6 export.
var centralTime = mustLoad("America/Chicago")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err) // cannot happen: time/tzdata is embedded
	}
	return loc
}

// Open opens a trace file, gunzipping it transparently when it starts with
// the gzip magic bytes, and returns a Reader for its format (sniffed from the
// content unless opts.Format is set).
func Open(path string, opts Options) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	r, err := newReader(f, path, opts, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// NewReader reads a trace from r (gzip handled as in Open); name is used in
// error messages. Close on the returned Reader does not close r.
func NewReader(r io.Reader, name string, opts Options) (Reader, error) {
	return newReader(r, name, opts, nil)
}

const readBuf = 256 << 10

func newReader(r io.Reader, name string, opts Options, closer io.Closer) (Reader, error) {
	src, err := decompress(r, name)
	if err != nil {
		return nil, err
	}
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	capped := &lineCap{r: src, file: name, max: maxLine}
	br := bufio.NewReaderSize(capped, readBuf)
	format := opts.Format
	if format == FormatAuto {
		head, _ := br.Peek(8192)
		format = Sniff(head)
		if format == FormatAuto {
			return nil, fmt.Errorf("traces: %s: %w (use --format: one of %v)", name, ErrUnknownFormat, Formats)
		}
	}
	if format == FormatSacctJSON {
		// JSON may legitimately sit on one line (jq -c); its reader decodes
		// one job at a time.
		capped.max = 0
	}
	lr := lineReader{file: name, br: br, closer: closer, skipBad: opts.SkipBad}
	if gz, ok := src.(*gzip.Reader); ok {
		lr.gz = gz
	}
	loc := opts.Location
	if loc == nil && opts.Zone != "" {
		z, err := time.LoadLocation(opts.Zone)
		if err != nil {
			return nil, fmt.Errorf("--tz %q: %w: %v", opts.Zone, ErrBadZone, err)
		}
		loc = z
	}
	if loc == nil {
		loc = time.UTC
		if format == FormatLS6 {
			loc = centralTime
		}
	}
	epoch := opts.Epoch
	if epoch.IsZero() {
		epoch = time.Unix(0, 0).UTC()
	}
	switch format {
	case FormatLS6:
		return newLS6Reader(lr, loc)
	case FormatParsable:
		return newParsableReader(lr, loc)
	case FormatSacctJSON:
		return newSacctJSONReader(lr)
	case FormatSWF:
		return newSWFReader(lr, epoch)
	case FormatOpenB:
		return newOpenBReader(lr, epoch)
	case FormatHelios:
		return newHeliosReader(lr, loc)
	case FormatCSV:
		return newCSVReader(lr)
	case FormatOpenBNodes:
		return nil, fmt.Errorf("traces: %s: %w: an openb node list holds nodes, not jobs (read it with ReadNodes)", name, ErrUnknownFormat)
	}
	return nil, fmt.Errorf("traces: %s: %w %q (want one of %v)", name, ErrUnknownFormat, format, Formats)
}

// decompress wraps r in a gzip reader when it starts with the gzip magic.
func decompress(r io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, readBuf)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("traces: %s: gzip: %w", name, err)
		}
		return gz, nil
	}
	return br, nil
}

// Sniff guesses the format of a trace from its first bytes (already
// decompressed); FormatAuto when unrecognised.
func Sniff(head []byte) Format {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return FormatAuto
	}
	if trimmed[0] == '{' {
		return FormatSacctJSON
	}
	if trimmed[0] == ';' {
		return FormatSWF
	}
	lines := bytes.SplitN(head, []byte("\n"), 4)
	first := bytes.TrimRight(lines[0], "\r")
	second := []byte(nil)
	if len(lines) > 1 {
		second = lines[1]
	}
	switch {
	case isDigits(bytes.TrimSpace(first)) && bytes.Contains(second, []byte("JobID")):
		return FormatLS6
	case bytes.HasPrefix(first, []byte(csvHeaderPrefix)):
		return FormatCSV
	case bytes.Contains(first, []byte("|")) && bytes.Contains(first, []byte("JobID")):
		return FormatParsable
	case bytes.HasPrefix(first, []byte("sn,cpu_milli,memory_mib,gpu")):
		return FormatOpenBNodes
	case bytes.HasPrefix(first, []byte("name,cpu_milli,memory_mib,num_gpu")):
		return FormatOpenB
	case bytes.Contains(first, []byte("job_id")) && bytes.Contains(first, []byte("submit_time")):
		return FormatHelios
	}
	if len(bytes.Fields(first)) == 18 && isDigits(bytes.Fields(first)[0]) {
		return FormatSWF
	}
	return FormatAuto
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lineReader is the shared line source of the text readers: it tracks the
// line number and the SkipBad bookkeeping.
type lineReader struct {
	file    string
	br      *bufio.Reader
	gz      *gzip.Reader
	closer  io.Closer
	line    int
	long    []byte
	skipBad bool
	skipped int
	errs    []error
}

// readLine returns the next line without its line ending; the slice is only
// valid until the next call.
func (l *lineReader) readLine() ([]byte, error) {
	b, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = l.br.ReadSlice('\n')
			l.long = append(l.long, b...)
		}
		b = l.long
	}
	if err != nil {
		if errors.Is(err, ErrLineTooLong) {
			return nil, err
		}
		if err != io.EOF {
			return nil, fmt.Errorf("traces: %s: line %d: %w", l.file, l.line+1, err)
		}
		if len(b) == 0 {
			return nil, io.EOF
		}
	}
	l.line++
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

// bad records a malformed row: with SkipBad it counts it and returns nil,
// otherwise it returns the error.
func (l *lineReader) bad(pe *ParseError) error {
	if pe.File == "" {
		pe.File = l.file
	}
	if pe.Line == 0 {
		pe.Line = l.line
	}
	if !l.skipBad || pe.fatal {
		return pe
	}
	l.skipped++
	if len(l.errs) < MaxKeptErrors {
		l.errs = append(l.errs, pe)
	}
	return nil
}

// Skipped implements Reader.
func (l *lineReader) Skipped() int { return l.skipped }

// Errors implements Reader.
func (l *lineReader) Errors() []error { return l.errs }

// Close implements Reader.
func (l *lineReader) Close() error {
	if l.gz != nil {
		l.gz.Close()
	}
	if l.closer != nil {
		c := l.closer
		l.closer = nil
		return c.Close()
	}
	return nil
}

// rowReader drives a line-per-job format: parse fills a Job from one line,
// returning keep=false for lines that are not jobs (comments, job steps).
type rowReader struct {
	lineReader
	format Format
	parse  func(line []byte, j *Job) (keep bool, pe *ParseError)
}

// Format implements Reader.
func (r *rowReader) Format() Format { return r.format }

// Next implements Reader.
func (r *rowReader) Next() (Job, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Job{}, err
		}
		if len(line) == 0 {
			continue
		}
		var j Job
		keep, pe := r.parse(line, &j)
		if pe != nil {
			if err := r.bad(pe); err != nil {
				return Job{}, err
			}
			continue
		}
		if keep {
			return j, nil
		}
	}
}

// lineCap passes r through, failing with ErrLineTooLong as soon as one line
// (bytes between two '\n') grows past max; max 0 disables the check. It
// sits below the bufio.Reader, so no reader above it ever holds more than
// max bytes of one line plus one buffer.
type lineCap struct {
	r    io.Reader
	file string
	max  int
	cur  int // bytes of the current line so far
	line int // 1-based number of the current line
	err  error
}

// Read implements io.Reader.
func (c *lineCap) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if c.max <= 0 {
		return n, err
	}
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.cur += len(b)
			break
		}
		c.cur += i
		if c.cur > c.max {
			break
		}
		c.cur, c.line = 0, c.line+1
		b = b[i+1:]
	}
	if c.cur > c.max {
		c.err = fmt.Errorf("traces: %s: line %d is longer than %d bytes (the line limit; raise Options.MaxLine if the file is genuine): %w",
			c.file, c.line+1, c.max, ErrLineTooLong)
		return 0, c.err
	}
	return n, err
}
