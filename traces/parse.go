package traces

import (
	"bytes"
	"time"
)

// splitInto splits line at sep into dst (without allocating) and returns the
// number of fields found, which may exceed len(dst) (the extra ones are not
// stored).
func splitInto(dst [][]byte, line []byte, sep byte) int {
	n := 0
	for {
		i := bytes.IndexByte(line, sep)
		if i < 0 {
			if n < len(dst) {
				dst[n] = line
			}
			return n + 1
		}
		if n < len(dst) {
			dst[n] = line[:i]
		}
		n++
		line = line[i+1:]
	}
}

// atoi parses a non-negative or negative decimal integer without allocating.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// num2 parses two ASCII digits.
func num2(b []byte) (int, bool) {
	if b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 0, false
	}
	return int(b[0]-'0')*10 + int(b[1]-'0'), true
}

// parseDateTime parses "YYYY-MM-DDTHH:MM:SS" (or with a space instead of the
// T) in loc, by hand: this is the hot path of the LS6 reader.
func parseDateTime(b []byte, loc *time.Location) (time.Time, bool) {
	if len(b) != 19 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	y1, ok1 := num2(b[0:2])
	y2, ok2 := num2(b[2:4])
	mo, ok3 := num2(b[5:7])
	d, ok4 := num2(b[8:10])
	h, ok5 := num2(b[11:13])
	mi, ok6 := num2(b[14:16])
	s, ok7 := num2(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y1*100+y2) || h > 23 || mi > 59 || s > 60 {
		return time.Time{}, false
	}
	return time.Date(y1*100+y2, time.Month(mo), d, h, mi, s, 0, loc), true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// interner deduplicates the strings of low-cardinality columns (users, names)
// so that a long trace does not allocate one string per row. It stops adding
// once full.
type interner map[string]string

const maxInterned = 1 << 14

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// parseExitCode parses Slurm's "code:signal".
func parseExitCode(b []byte) (code, sig int, ok bool) {
	i := bytes.IndexByte(b, ':')
	if i < 0 {
		c, ok := atoi(b)
		return int(c), 0, ok
	}
	c, ok1 := atoi(b[:i])
	s, ok2 := atoi(b[i+1:])
	return int(c), int(s), ok1 && ok2
}
