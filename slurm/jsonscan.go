package slurm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a small pull parser for the JSON the Slurm commands print. It
// decodes only the fields the parsers ask for and skips everything else
// without building values, which makes a 50,000-job squeue document several
// times faster to read than with encoding/json (see BenchmarkParseSqueueJSON).
//
// Semantics follow encoding/json decoding into maps: keys match exactly, the
// last of duplicate keys wins, invalid UTF-8 in strings becomes U+FFFD, and
// null reads as the zero value. It is stricter than nothing and looser than a
// validator: skipped values are checked for balance and string syntax only.
type scanner struct {
	b      []byte
	i      int
	intern map[string]string // repeated values (users, partitions, states, TRES), see strIntern
}

// maxIntern bounds the intern table of one document.
const maxIntern = 1 << 14

// syntaxError reports malformed JSON at the current offset.
func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

// ws skips white space (a tight loop on locals: pretty-printed Slurm output
// is about a third indentation).
func (s *scanner) ws() {
	b, i := s.b, s.i
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// peek returns the next non-space byte without consuming it (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// expect consumes the byte c (after white space).
func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return s.errorf("unexpected end of input, want %q", c)
		}
		return s.errorf("unexpected %q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// literal consumes null, true or false and reports which.
func (s *scanner) literal() (string, error) {
	for _, w := range []string{"null", "true", "false"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
			s.i += len(w)
			return w, nil
		}
	}
	return "", s.errorf("invalid literal")
}

// null consumes a null if one comes next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object iterates over the members of an object (or accepts null). fn is
// called with each raw key (valid until the next call) and must consume the
// member's value.
func (s *scanner) object(fn func(key []byte) error) error {
	if s.null() {
		return nil
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.rawKey()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or '}' in object")
		}
	}
}

// array iterates over the elements of an array (or accepts null); fn must
// consume each element.
func (s *scanner) array(fn func() error) error {
	if s.null() {
		return nil
	}
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if err := fn(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or ']' in array")
		}
	}
}

// rawKey reads an object key. Keys without escapes are returned as a slice of
// the input; others are decoded.
func (s *scanner) rawKey() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errorf("want a string key")
	}
	raw, esc, err := s.rawString()
	if err != nil {
		return nil, err
	}
	if !esc {
		// Keys are only compared with ASCII names: invalid UTF-8 (which
		// encoding/json would replace) cannot match either way.
		return raw, nil
	}
	return []byte(unescape(raw)), nil
}

// rawString consumes a string and returns its undecoded contents and whether
// they hold escapes. It does not reject control characters: values that are
// kept are checked by checkString, skipped ones need not be.
func (s *scanner) rawString() (raw []byte, escaped bool, err error) {
	b := s.b
	start := s.i + 1 // after the opening quote
	i := start
	// Eight bytes at a time: the lowest byte that is '"' or '\' decides
	// (most keys and values are short, where this beats IndexByte's setup).
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		m := zeroBytes(x^(swarLo*'"')) | zeroBytes(x^(swarLo*'\\'))
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) / 8
		if b[i] == '"' {
			s.i = i + 1
			return b[start:i], escaped, nil
		}
		escaped = true
		i += 2 // the backslash and the byte it escapes
	}
	for i < len(b) {
		switch b[i] {
		case '"':
			s.i = i + 1
			return b[start:i], escaped, nil
		case '\\':
			escaped = true
			i++
		}
		i++
	}
	s.i = len(b)
	return nil, false, s.errorf("unterminated string")
}

// SWAR constants: swarLo has 0x01 in every byte.
const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// zeroBytes has the high bit set in (at least) the lowest zero byte of x;
// bits above the lowest zero byte may be false positives, so only the
// lowest set bit is used.
func zeroBytes(x uint64) uint64 { return (x - swarLo) &^ x & swarHi }

// checkString rejects control characters in a kept string (as encoding/json does).
func (s *scanner) checkString(raw []byte) error {
	for _, c := range raw {
		if c < 0x20 {
			return s.errorf("control character in string")
		}
	}
	return nil
}

// str reads a string; null and other scalars read as "" (numbers keep their text).
func (s *scanner) str() (string, error) {
	switch c := s.peek(); {
	case c == '"':
		raw, esc, err := s.rawString()
		if err == nil {
			err = s.checkString(raw)
		}
		if err != nil {
			return "", err
		}
		if !esc && utf8.Valid(raw) {
			return string(raw), nil
		}
		return unescape(raw), nil
	case c == 'n' || c == 't' || c == 'f':
		_, err := s.literal()
		return "", err
	case c == '-' || (c >= '0' && c <= '9'):
		return string(s.number()), nil
	default:
		return "", s.skip()
	}
}

// strIntern is str for values that repeat across records (users,
// partitions, states, TRES strings): equal values share one string, which
// saves most allocations on large documents.
func (s *scanner) strIntern() (string, error) {
	if s.peek() != '"' {
		return s.str()
	}
	save := s.i
	raw, esc, err := s.rawString()
	if err != nil {
		return "", err
	}
	if esc || !utf8.Valid(raw) {
		s.i = save
		return s.str()
	}
	if err := s.checkString(raw); err != nil {
		return "", err
	}
	if v, ok := s.intern[string(raw)]; ok {
		return v, nil
	}
	v := string(raw)
	if s.intern == nil {
		s.intern = map[string]string{}
	}
	if len(s.intern) < maxIntern {
		s.intern[v] = v
	}
	return v, nil
}

// strs reads a string or an array of strings (Slurm 23.x+ turned several
// strings into arrays); null is nil. Non-string elements are skipped.
func (s *scanner) strs() ([]string, error) {
	if s.peek() != '[' {
		v, err := s.strIntern()
		if err != nil || v == "" {
			return nil, err
		}
		return []string{v}, nil
	}
	var out []string
	err := s.array(func() error {
		if s.peek() != '"' {
			return s.skip()
		}
		v, err := s.strIntern()
		out = append(out, v)
		return err
	})
	return out, err
}

// number consumes a number's text (validated loosely: JSON number characters).
func (s *scanner) number() []byte {
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			s.i++
		default:
			return s.b[start:s.i]
		}
	}
	return s.b[start:s.i]
}

// num reads the numbers Slurm prints: 123 (22.05), {"set":true,"infinite":false,
// "number":123} (23.02+), "123" (some meta fields), true/false, or null.
func (s *scanner) num() (flexNum, error) {
	switch c := s.peek(); {
	case c == '{':
		var out flexNum
		set, hasSet := true, false
		var inner flexNum
		err := s.object(func(key []byte) error {
			switch string(key) {
			case "set":
				v, err := s.boolean()
				set, hasSet = v, true
				return err
			case "infinite":
				v, err := s.boolean()
				out.Infinite = v
				return err
			case "number":
				v, err := s.num()
				inner = v
				return err
			}
			return s.skip()
		})
		_ = hasSet
		out.N = inner.N
		out.Set = set && inner.Set
		return out, err
	case c == '"':
		raw, esc, err := s.rawString()
		if err == nil {
			err = s.checkString(raw)
		}
		if err != nil {
			return flexNum{}, err
		}
		str := string(raw)
		if esc {
			str = unescape(raw)
		}
		n, ok := parseNum(strings.TrimSpace(str))
		if !ok {
			// "", "N/A", "UNLIMITED": a value Slurm could not give as a number reads as unset.
			return flexNum{}, nil
		}
		return flexNum{N: n, Set: true}, nil
	case c == 'n', c == 't', c == 'f':
		w, err := s.literal()
		if w == "true" {
			return flexNum{N: 1, Set: true}, err
		}
		return flexNum{}, err
	case c == '-' || (c >= '0' && c <= '9'):
		txt := s.number()
		n, ok := parseNum(string(txt))
		if !ok {
			return flexNum{}, s.errorf("number %q", txt)
		}
		return flexNum{N: n, Set: true}, nil
	case c == 0:
		return flexNum{}, s.errorf("unexpected end of input")
	}
	return flexNum{}, s.errorf("unexpected %q, want a number", s.b[s.i])
}

// parseNum reads an integer, or a float truncated toward zero (clamped to int64).
func parseNum(t string) (int64, bool) {
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		return v, true
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		// Out-of-range integers (ParseInt's ErrRange) are clamped like floats.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	switch {
	case v >= 9.2e18:
		return 1<<63 - 1, true
	case v <= -9.2e18:
		return -1 << 63, true
	}
	return int64(v), true
}

// boolean reads true/false (null is false; numbers are true when non-zero).
func (s *scanner) boolean() (bool, error) {
	n, err := s.num()
	return n.Set && n.N != 0, err
}

// skip consumes one value of any kind.
func (s *scanner) skip() error {
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{' || c == '[':
		return s.skipNested()
	case c == 'n' || c == 't' || c == 'f':
		_, err := s.literal()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		if len(s.number()) == 0 {
			return s.errorf("invalid number")
		}
		return nil
	case c == 0:
		return s.errorf("unexpected end of input")
	default:
		return s.errorf("unexpected %q", c)
	}
}

// skipNested skips an object or array by matching brackets, jumping over strings.
func (s *scanner) skipNested() error {
	var stack []byte
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch c {
		case '"':
			if _, _, err := s.rawString(); err != nil {
				return err
			}
			continue
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return s.errorf("unbalanced %q", c)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				s.i++
				return nil
			}
		}
		s.i++
	}
	return s.errorf("unexpected end of input in a nested value")
}

// end checks that only white space follows the top-level value.
func (s *scanner) end() error {
	if s.peek() != 0 {
		return s.errorf("data after the top-level value")
	}
	return nil
}

// unescape decodes a JSON string body with escapes, replacing invalid UTF-8
// byte by byte with U+FFFD (as encoding/json does).
func unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if c < utf8.RuneSelf {
				out = append(out, c)
				i++
				continue
			}
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, raw[i:i+size]...)
			}
			i += size
			continue
		}
		if i+1 >= len(raw) {
			out = append(out, '\\')
			break
		}
		e := raw[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw, i)
			if !ok {
				out = append(out, '\\', 'u')
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw, i+2); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			out = append(out, '\\', e)
		}
	}
	return string(out)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
