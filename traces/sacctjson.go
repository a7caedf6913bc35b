package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// ErrUnsupportedVersion is returned for sacct --json output of a Slurm
// version the reader does not know (it knows 21.08 to 25.x).
var ErrUnsupportedVersion = errors.New("unsupported Slurm JSON version")

// sacct --json: the reader walks the top-level object with json.Decoder
// tokens and decodes one element of "jobs" at a time, so memory stays
// bounded by the largest job. Fields are matched by name and accept both
// schema generations:
//
//   - Slurm 21.08/22.05 (openapi v0.0.37/v0.0.38): numbers are plain
//     integers (time.limit in minutes, priority, exit_code.return_code),
//     state.current and exit_code.status are strings, meta.Slurm.version
//     holds integers;
//   - Slurm 23.02 … 25.x (data_parser v0.0.39 … v0.0.43): numbers may be
//     {"set":bool,"infinite":bool,"number":N} objects (unset or infinite
//     read as 0), state.current and exit_code.status may be string arrays,
//     meta.slurm.version holds strings.
//
// A meta version with a major outside 21–25 is rejected with
// ErrUnsupportedVersion. Times are Unix seconds (0 = unknown). GPUs and
// GPUType come from tres.allocated (falling back to tres.requested) entries
// of type "gres" named "gpu" or "gpu:TYPE". Job steps nested in a job are
// ignored. A malformed job is a *ParseError whose Line is the job's 1-based
// index in the jobs array and whose Field names the JSON path.
type sacctJSONReader struct {
	lineReader
	dec     *json.Decoder
	state   int // 0 before '{', 1 in the top object, 2 in jobs, 3 done
	index   int
	version string
}

func newSacctJSONReader(lr lineReader) (Reader, error) {
	dec := json.NewDecoder(lr.br)
	dec.UseNumber()
	return &sacctJSONReader{lineReader: lr, dec: dec}, nil
}

// Format implements Reader.
func (r *sacctJSONReader) Format() Format { return FormatSacctJSON }

func (r *sacctJSONReader) syntax(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("traces: %s: sacct json near byte %d: %w", r.file, r.dec.InputOffset(), err)
}

// Next implements Reader.
func (r *sacctJSONReader) Next() (Job, error) {
	for {
		switch r.state {
		case 0:
			tok, err := r.dec.Token()
			if err != nil {
				return Job{}, r.syntax(err)
			}
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return Job{}, r.syntax(fmt.Errorf("want a JSON object, got %v", tok))
			}
			r.state = 1
		case 1:
			if !r.dec.More() {
				if _, err := r.dec.Token(); err != nil { // '}'
					return Job{}, r.syntax(err)
				}
				r.state = 3
				continue
			}
			tok, err := r.dec.Token()
			if err != nil {
				return Job{}, r.syntax(err)
			}
			key, _ := tok.(string)
			switch key {
			case "meta":
				var m sacctMeta
				if err := r.dec.Decode(&m); err != nil {
					// %v, not %w: a malformed version number must not surface as a
					// row's ParseError (it has no row); it is a header error.
					return Job{}, r.syntax(fmt.Errorf("meta: %v", err))
				}
				if err := r.checkVersion(m); err != nil {
					return Job{}, err
				}
			case "jobs":
				tok, err := r.dec.Token()
				if err != nil {
					return Job{}, r.syntax(err)
				}
				if d, ok := tok.(json.Delim); !ok || d != '[' {
					return Job{}, r.syntax(fmt.Errorf("jobs: want an array, got %v", tok))
				}
				r.state = 2
			default:
				var skip json.RawMessage
				if err := r.dec.Decode(&skip); err != nil {
					return Job{}, r.syntax(err)
				}
			}
		case 2:
			if !r.dec.More() {
				if _, err := r.dec.Token(); err != nil { // ']'
					return Job{}, r.syntax(err)
				}
				r.state = 1
				continue
			}
			r.index++
			var sj sacctJob
			err := r.dec.Decode(&sj)
			var pe *ParseError
			if err != nil {
				var te *json.UnmarshalTypeError
				var se *json.SyntaxError
				switch {
				case errors.As(err, &pe):
				case errors.As(err, &te):
					pe = &ParseError{Field: "jobs[" + itoa(r.index-1) + "]." + te.Field, Want: "JSON " + te.Type.String(), Got: te.Value}
				case errors.As(err, &se):
					return Job{}, r.syntax(err)
				default:
					return Job{}, r.syntax(err)
				}
			}
			var j Job
			if pe == nil {
				pe = sj.toJob(&j)
				if pe != nil {
					pe.Field = "jobs[" + itoa(r.index-1) + "]." + pe.Field
				}
			}
			if pe != nil {
				pe.Line = r.index
				if err := r.bad(pe); err != nil {
					return Job{}, err
				}
				continue
			}
			return j, nil
		case 3:
			return Job{}, io.EOF
		}
	}
}

type sacctMeta struct {
	Slurm1 *sacctSlurmMeta `json:"Slurm"`
	Slurm2 *sacctSlurmMeta `json:"slurm"`
}

type sacctSlurmMeta struct {
	Version struct {
		Major slurmNum `json:"major"`
		Minor slurmNum `json:"minor"`
	} `json:"version"`
	Release string `json:"release"`
}

func (r *sacctJSONReader) checkVersion(m sacctMeta) error {
	s := m.Slurm2
	if s == nil {
		s = m.Slurm1
	}
	if s == nil {
		return nil // no version information: parse by field names
	}
	major := s.Version.Major.V
	r.version = fmt.Sprintf("%d.%02d", major, s.Version.Minor.V)
	if major < 21 || major > 25 {
		return fmt.Errorf("traces: %s: %w: Slurm %s (release %q); this reader knows 21.08 to 25.x", r.file, ErrUnsupportedVersion, r.version, s.Release)
	}
	return nil
}

// slurmNum is a Slurm JSON number: a plain integer (22.05) or a
// {"set","infinite","number"} object (23.02+). Unset or infinite is 0.
type slurmNum struct {
	V   int64
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *slurmNum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*n = slurmNum{}
	switch {
	case len(b) == 0 || string(b) == "null":
		return nil
	case b[0] == '{':
		var o struct {
			Set      *bool       `json:"set"`
			Infinite bool        `json:"infinite"`
			Number   json.Number `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		if (o.Set != nil && !*o.Set) || o.Infinite || o.Number == "" {
			return nil
		}
		return n.parse(string(o.Number), b)
	case b[0] == '"':
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return err
		}
		return n.parse(s, b)
	}
	return n.parse(string(b), b)
}

func (n *slurmNum) parse(s string, raw []byte) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return perr("number", "an integer or a {set,infinite,number} object", raw)
		}
		v = int64(f)
	}
	n.V, n.Set = v, true
	return nil
}

// slurmStrings is a string (22.05) or a string array (23.11+).
type slurmStrings []string

// UnmarshalJSON implements json.Unmarshaler.
func (s *slurmStrings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var a []string
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		*s = a
		return nil
	}
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*s = []string{one}
	return nil
}

type sacctTRES struct {
	Type  string   `json:"type"`
	Name  string   `json:"name"`
	Count slurmNum `json:"count"`
}

type sacctJob struct {
	JobID     slurmNum `json:"job_id"`
	Name      string   `json:"name"`
	User      string   `json:"user"`
	Account   string   `json:"account"`
	Partition string   `json:"partition"`
	Time      struct {
		Submission slurmNum `json:"submission"`
		Eligible   slurmNum `json:"eligible"`
		Start      slurmNum `json:"start"`
		End        slurmNum `json:"end"`
		Limit      slurmNum `json:"limit"`
	} `json:"time"`
	AllocationNodes slurmNum `json:"allocation_nodes"`
	Required        struct {
		CPUs slurmNum `json:"CPUs"`
	} `json:"required"`
	State struct {
		Current slurmStrings `json:"current"`
	} `json:"state"`
	ExitCode struct {
		Status     slurmStrings `json:"status"`
		ReturnCode slurmNum     `json:"return_code"`
		Signal     struct {
			ID     slurmNum `json:"id"`
			Signal slurmNum `json:"signal_id"`
		} `json:"signal"`
	} `json:"exit_code"`
	Priority slurmNum `json:"priority"`
	TRES     struct {
		Allocated []sacctTRES `json:"allocated"`
		Requested []sacctTRES `json:"requested"`
	} `json:"tres"`
}

// unixTime converts seconds since the epoch; unset, 0 and Slurm's NO_VAL and
// INFINITE sentinels (plain numbers in 22.05 JSON, which would otherwise read
// as dates in 2106) are the zero time.
func unixTime(n slurmNum) time.Time {
	if !n.Set || n.V <= 0 || n.V >= slurmfmt.NoVal {
		return time.Time{}
	}
	return time.Unix(n.V, 0).UTC()
}

func (s *sacctJob) toJob(j *Job) *ParseError {
	if !s.JobID.Set || s.JobID.V <= 0 {
		return perr("job_id", "a positive job id", []byte(strconv.FormatInt(s.JobID.V, 10)))
	}
	j.ID = strconv.FormatInt(s.JobID.V, 10)
	j.Name, j.User, j.Account, j.Partition = s.Name, s.User, s.Account, s.Partition
	j.Submit = unixTime(s.Time.Submission)
	j.Eligible = unixTime(s.Time.Eligible)
	j.Start = unixTime(s.Time.Start)
	j.End = unixTime(s.Time.End)
	if !j.Start.IsZero() && !j.End.IsZero() && j.End.Before(j.Start) {
		return perr("time.end", "a time not before time.start "+strconv.FormatInt(s.Time.Start.V, 10), []byte(strconv.FormatInt(s.Time.End.V, 10)))
	}
	if s.Time.Limit.V < 0 {
		return perr("time.limit", "non-negative minutes", []byte(strconv.FormatInt(s.Time.Limit.V, 10)))
	}
	if s.Time.Limit.V < slurmfmt.NoVal { // NO_VAL (partition limit) and INFINITE: no limit known, 0
		j.TimeLimit = time.Duration(s.Time.Limit.V) * time.Minute
	}
	if s.AllocationNodes.V < 0 {
		return perr("allocation_nodes", "a non-negative count", []byte(strconv.FormatInt(s.AllocationNodes.V, 10)))
	}
	if s.Required.CPUs.V < 0 {
		return perr("required.CPUs", "a non-negative count", []byte(strconv.FormatInt(s.Required.CPUs.V, 10)))
	}
	j.Nodes = int(s.AllocationNodes.V)
	j.CPUs = int(s.Required.CPUs.V)
	if len(s.State.Current) > 0 {
		j.State = State(s.State.Current[0])
	}
	j.ExitCode = int(s.ExitCode.ReturnCode.V)
	j.Signal = int(s.ExitCode.Signal.ID.V)
	if j.Signal == 0 {
		j.Signal = int(s.ExitCode.Signal.Signal.V)
	}
	j.Priority = s.Priority.V
	for _, list := range [][]sacctTRES{s.TRES.Allocated, s.TRES.Requested} {
		for _, t := range list {
			if t.Type != "gres" {
				continue
			}
			if t.Count.V < 0 {
				return perr("tres.count", "a non-negative count", []byte(strconv.FormatInt(t.Count.V, 10)))
			}
			if t.Name == "gpu" {
				j.GPUs = int(t.Count.V)
			} else if typ, ok := strings.CutPrefix(t.Name, "gpu:"); ok {
				j.GPUType = typ
				if j.GPUs == 0 {
					j.GPUs = int(t.Count.V)
				}
			}
		}
		if j.GPUs > 0 {
			break
		}
	}
	return nil
}
