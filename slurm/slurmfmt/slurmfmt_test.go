package slurmfmt

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDurationMeaning pins what each special value means. The expected
// values are worked out from sbatch(1) --time ("Acceptable time formats
// include minutes, minutes:seconds, hours:minutes:seconds, days-hours,
// days-hours:minutes and days-hours:minutes:seconds"; "A time limit of zero
// requests that no time limit be imposed") and sacct(1)/squeue(1)/sinfo(1)
// output words, not from this package's code.
func TestDurationMeaning(t *testing.T) {
	cases := []struct {
		in        string
		kind      Kind
		value     time.Duration
		unlimited bool // as a request (sbatch --time)
	}{
		{"N/A", NotSet, 0, false},
		{"UNLIMITED", Unlimited, 0, true},
		{"Partition_Limit", PartitionLimit, 0, false},
		{"0", Set, 0, true},                        // zero: "no time limit be imposed"
		{"1-00:00:00", Set, 24 * time.Hour, false}, // days-hours:minutes:seconds
		{"30", Set, 30 * time.Minute, false},       // minutes
		{"2:00", Set, 2 * time.Minute, false},      // minutes:seconds, not hours:minutes
		{"infinite", Unlimited, 0, true},
		{"-1", Unlimited, 0, true},
		{"None", NotSet, 0, false},
		{"", NotSet, 0, false},
		{"INVALID", NotSet, 0, false},
	}
	for _, c := range cases {
		d, err := ParseDuration(c.in)
		if err != nil || d.Kind != c.kind || d.Value != c.value || d.IsUnlimited() != c.unlimited {
			t.Errorf("ParseDuration(%q) = %+v (unlimited %v), %v; want kind %v, %v, unlimited %v", c.in, d, d.IsUnlimited(), err, c.kind, c.value, c.unlimited)
		}
	}
}

func TestParseDurationForms(t *testing.T) {
	ok := map[string]time.Duration{
		"90": 90 * time.Minute, "5:30": 5*time.Minute + 30*time.Second, "1:02:03": time.Hour + 2*time.Minute + 3*time.Second,
		"2-0": 48 * time.Hour, "1-12": 36 * time.Hour, "1-02:30": 26*time.Hour + 30*time.Minute, "1-0:30": 24*time.Hour + 30*time.Minute,
		"1-00:00:10": 24*time.Hour + 10*time.Second, "2-1:2:3": 49*time.Hour + 2*time.Minute + 3*time.Second,
		"30:15": 30*time.Minute + 15*time.Second, "2:00:00": 2 * time.Hour, " 2880 ": 48 * time.Hour,
		"90:00": 90 * time.Minute, // fields may exceed their usual range, as in Slurm
	}
	for in, want := range ok {
		d, err := ParseDuration(in)
		if err != nil || d != (Duration{Kind: Set, Value: want}) {
			t.Errorf("ParseDuration(%q) = %+v, %v; want %v", in, d, err, want)
		}
	}
	for _, in := range []string{"x", "x-1", "1-x", "-5", "1:2:3:4", "1-2:3:4:5", "1-", "1::2", ":", "+5", "1-2-3", "1:2-3", "1e3", "1 2", "9999999999", "36501-00:00:00"} {
		if d, err := ParseDuration(in); err == nil || !errors.Is(err, ErrDuration) {
			t.Errorf("ParseDuration(%q) = %+v, %v; want an ErrDuration", in, d, err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "00:00:00", 2 * time.Hour: "02:00:00", 24 * time.Hour: "1-00:00:00", 49*time.Hour + 2*time.Minute + 3*time.Second: "2-01:02:03",
		time.Second / 2: "00:00:01", -time.Second: "INVALID",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for d, want := range map[Duration]string{{Kind: Unlimited}: "UNLIMITED", {Kind: PartitionLimit}: "Partition_Limit", {Kind: NotSet}: "N/A", {Value: time.Hour}: "01:00:00"} {
		if got := d.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", d, got, want)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	cases := map[string][]string{
		"node[1-3,07],gpu01": {"node1", "node2", "node3", "node07", "gpu01"},
		"gpu[01-02]-r[1-2]":  {"gpu01-r1", "gpu01-r2", "gpu02-r1", "gpu02-r2"},
		"n[8-10]":            {"n8", "n9", "n10"},
		"n[001-003,010]":     {"n001", "n002", "n003", "n010"},
		"x[1-2,5]y":          {"x1y", "x2y", "x5y"},
		"a, b":               {"a", "b"},
		"":                   nil,
		"c[001-002]":         {"c001", "c002"},
	}
	for in, want := range cases {
		got, err := ExpandHostlist(in, 1<<16)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"a[", "a]", "n[3-1]", "n[x]", "n[[1]]", "n[1-]", "n[0-99999999]", "n[]"} {
		if got, err := ExpandHostlist(in, 1<<16); err == nil || !errors.Is(err, ErrHostlist) {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want an ErrHostlist", in, got, err)
		}
	}
	if _, err := ExpandHostlist("n[1-3]", 2); err == nil {
		t.Error("ExpandHostlist ignored its limit")
	}
}

func TestGPUsFromGRES(t *testing.T) {
	cases := []struct {
		in    string
		total int
		typ   string
		bad   bool
	}{
		{"gpu:4", 4, "", false},
		{"gpu", 1, "", false},
		{"gpu:a100", 1, "a100", false},
		{"gpu:a100:2(IDX:0-1)", 2, "a100", false},
		{"gpu:a100:4(S:0,1)", 4, "a100", false},
		{"gres/gpu=2", 2, "", false},
		{"gres/gpu:a100=2", 2, "a100", false},
		{"gres:gpu:2", 2, "", false},
		{"gpu:a100:2,gpu:v100:1", 3, "v100", false},
		{"gpu:a100:2,shard:1,mps:100", 2, "a100", false},
		{"", 0, "", false},
		{"(null)", 0, "", false},
		{"gpu:a100:x", 0, "", true},
		{"gpu:a100:x,gpu:2", 2, "", true},
		{"gpu:-1", 0, "", true},
		{"gpu:", 0, "", true},
		{"gpu:a:1:2", 0, "", true},
	}
	for _, c := range cases {
		n, typ, err := GPUsFromGRES(c.in)
		if n != c.total || typ != c.typ || (err != nil) != c.bad {
			t.Errorf("GPUsFromGRES(%q) = %d, %q, %v; want %d, %q, error %v", c.in, n, typ, err, c.total, c.typ, c.bad)
		}
	}
}

func TestGPUsFromTRES(t *testing.T) {
	cases := []struct {
		in    string
		total int
		typ   string
		bad   bool
	}{
		{"cpu=8,mem=64G,gres/gpu=4,gres/gpu:a100=4", 4, "a100", false}, // typed not added to untyped
		{"gres/gpu:a100=4,gres/gpu=4", 4, "a100", false},
		{"billing=3,cpu=128,gres/gpu=3,mem=0,node=1", 3, "", false},
		{"gres/gpu:a100=2,gres/gpu:v100=1", 3, "v100", false}, // no untyped total: typed summed
		{"cpu=1,gres/gpumem=10G", 0, "", false},
		{"cpu=1,gres/gpu=x", 0, "", true},
		{"cpu", 0, "", true},
	}
	for _, c := range cases {
		n, typ, err := GPUsFromTRES(c.in)
		if n != c.total || typ != c.typ || (err != nil) != c.bad {
			t.Errorf("GPUsFromTRES(%q) = %d, %q, %v; want %d, %q, error %v", c.in, n, typ, err, c.total, c.typ, c.bad)
		}
	}
}

func FuzzDuration(f *testing.F) {
	for _, s := range []string{"30", "2:00", "1-00:00:00", "UNLIMITED", "Partition_Limit", "N/A", "0", "1-2", "-1", "::", "1-2:3:4"} {
		f.Add(s, int64(0))
	}
	f.Add("", int64(90*time.Minute+time.Second/3))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		// Parse, print, parse again: the same value.
		if d, err := ParseDuration(s); err == nil {
			if d.Value < 0 || d.Value > MaxDuration || (d.Kind != Set && d.Value != 0) || d.Value%time.Second != 0 {
				t.Fatalf("ParseDuration(%q) = %+v", s, d)
			}
			back, err := ParseDuration(d.String())
			if err != nil || back != d {
				t.Fatalf("%q: %+v printed %q read back as %+v, %v", s, d, d.String(), back, err)
			}
		}
		// Format, parse: the length rounded up to the second.
		v := time.Duration(n)
		if v < 0 || v > MaxDuration-time.Second {
			return
		}
		want := v.Truncate(time.Second)
		if want < v {
			want += time.Second
		}
		back, err := ParseDuration(FormatDuration(v))
		if err != nil || back != (Duration{Kind: Set, Value: want}) {
			t.Fatalf("FormatDuration(%v) = %q read back as %+v, %v", v, FormatDuration(v), back, err)
		}
	})
}

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"node[1-3,07]", "gpu01", "gpu[01-02]-r[1-2]", "a[", "a]", "n[5-1]", "x[0-99999999]", "a,,b", " a , b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const max = 1 << 12
		names, err := ExpandHostlist(s, max)
		if err != nil {
			if !errors.Is(err, ErrHostlist) {
				t.Fatalf("ExpandHostlist(%q): %v does not wrap ErrHostlist", s, err)
			}
			return
		}
		if len(names) > max {
			t.Fatalf("ExpandHostlist(%q): %d names over the limit", s, len(names))
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[],") {
				t.Fatalf("ExpandHostlist(%q) gave %q", s, n)
			}
		}
		// Names without brackets or commas expand to themselves.
		if !strings.ContainsAny(s, "[],") && strings.TrimSpace(s) != "" && (len(names) != 1 || names[0] != strings.TrimSpace(s)) {
			t.Fatalf("ExpandHostlist(%q) = %q", s, names)
		}
	})
}

func FuzzGRES(f *testing.F) {
	for _, s := range []string{"gpu:4", "gpu:a100:2(IDX:0-1)", "gres/gpu=2", "gpu:a100:2,gpu:v100:1", "gpu", "gpu:x:y", "shard:1", "gpu:2(S:0,1),gpu:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, typ, err := GPUsFromGRES(s)
		if n < 0 || strings.ContainsAny(typ, ":=,(") {
			t.Fatalf("GPUsFromGRES(%q) = %d, %q, %v", s, n, typ, err)
		}
		if err != nil && !errors.Is(err, ErrGRES) {
			t.Fatalf("GPUsFromGRES(%q): %v does not wrap ErrGRES", s, err)
		}
		// Entries add up: s twice over counts twice (unless an unclosed
		// '(' swallows the second copy).
		if err == nil && n < 1<<20 && !strings.ContainsAny(s, "()") {
			if n2, _, err2 := GPUsFromGRES(s + "," + s); err2 != nil || n2 != 2*n {
				t.Fatalf("GPUsFromGRES(%q twice) = %d, %v; want %d", s, n2, err2, 2*n)
			}
		}
	})
}

func FuzzTRES(f *testing.F) {
	for _, s := range []string{"cpu=8,mem=64G,gres/gpu=4,gres/gpu:a100=4", "gres/gpu:a100=2,gres/gpu:v100=1", "cpu", "gres/gpu=x", "gres/gpu=4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, typ, err := GPUsFromTRES(s)
		if n < 0 || strings.ContainsAny(typ, ",=") {
			t.Fatalf("GPUsFromTRES(%q) = %d, %q, %v", s, n, typ, err)
		}
		if err != nil && !errors.Is(err, ErrGRES) {
			t.Fatalf("GPUsFromTRES(%q): %v does not wrap ErrGRES", s, err)
		}
		// An untyped total is the total, whatever typed entries say.
		if err == nil {
			if n2, _, err2 := GPUsFromTRES(s + ",gres/gpu=7"); err2 != nil || n2 != 7 {
				t.Fatalf("GPUsFromTRES(%q + gres/gpu=7) = %d, %v; want 7", s, n2, err2)
			}
		}
	})
}

func TestDependency(t *testing.T) {
	for _, c := range []struct {
		in, out string
		ids     []string
		err     bool
	}{
		{in: "", out: ""},
		{in: "afterany:123", out: "afterany:123", ids: []string{"123"}},
		{in: "afterany:1:2,afterok:3", out: "afterany:1:2,afterok:3", ids: []string{"1", "2", "3"}},
		{in: "afterok:7(unfulfilled),afterany:7", out: "afterok:7,afterany:7", ids: []string{"7"}},
		{in: "singleton", out: "singleton"},
		{in: "after:5+10", out: "after:5+10", ids: []string{"5+10"}},
		{in: "afterany", err: true},
		{in: "afterany:", err: true},
		{in: "before:3", err: true},
		{in: "afterok:1?afterany:2", err: true},
	} {
		d, err := ParseDependency(c.in)
		if (err != nil) != c.err {
			t.Errorf("ParseDependency(%q): %v, want error %v", c.in, err, c.err)
			continue
		}
		if c.err {
			continue
		}
		if got := d.String(); got != c.out {
			t.Errorf("ParseDependency(%q).String() = %q, want %q", c.in, got, c.out)
		}
		if got := d.JobIDs(); !slices.Equal(got, c.ids) {
			t.Errorf("ParseDependency(%q).JobIDs() = %q, want %q", c.in, got, c.ids)
		}
	}
	if got := AfterAny("4", "5").String(); got != "afterany:4:5" {
		t.Errorf("AfterAny = %q", got)
	}
}

func FuzzDependency(f *testing.F) {
	for _, s := range []string{"afterany:1", "afterok:1:2,afterany:3", "singleton", "after:5+10", "afterok:9(failed)", ":", ",,", "afterany::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDependency(s)
		if err != nil {
			return
		}
		// What parses renders to a form that parses back to the same terms.
		back, err := ParseDependency(d.String())
		if err != nil {
			t.Fatalf("%q renders %q, which does not parse: %v", s, d.String(), err)
		}
		if back.String() != d.String() {
			t.Fatalf("%q: %q then %q", s, d.String(), back.String())
		}
	})
}

// TestParseSignal reads --signal values as sbatch(1) describes them:
// "--signal=[{R|B}:]<sig_num>[@sig_time]", "sig_num may either be a signal
// number or name (e.g. "10" or "USR1")", "If a sig_num is specified without
// any sig_time, the default time will be 60 seconds", "sig_time must have an
// integer value between 0 and 65535"; the flag letters and the optional
// "SIG" come from Slurm's get_signal_opts and sig_name2num.
func TestParseSignal(t *testing.T) {
	cases := []struct {
		in   string
		want Signal
		err  string
	}{
		{"B:USR1@40", Signal{Name: "USR1", Batch: true, Lead: 40 * time.Second}, ""},
		{"USR1", Signal{Name: "USR1", Lead: 60 * time.Second}, ""},
		{"10@600", Signal{Name: "10", Lead: 10 * time.Minute}, ""},
		{"b:sigterm@0", Signal{Name: "TERM", Batch: true}, ""},
		{"R:USR2@5", Signal{Name: "USR2", Reservation: true, Lead: 5 * time.Second}, ""},
		{"RB:USR1@65535", Signal{Name: "USR1", Batch: true, Reservation: true, Lead: 65535 * time.Second}, ""},
		{"BR:USR1@1", Signal{Name: "USR1", Batch: true, Reservation: true, Lead: time.Second}, ""},
		{"BUSR1", Signal{Name: "USR1", Batch: true, Lead: time.Minute}, ""}, // the ':' is optional after the flags
		{"B:USR1@65536", Signal{}, "@65536"},
		{"B:USR1@-1", Signal{}, "@-1"},
		{"B:USR1@1m", Signal{}, "@1m"},
		{"B:USR1@", Signal{}, "@:"},
		{"B:NOPE@40", Signal{}, `unknown signal "NOPE"`},
		{"0@40", Signal{}, "signal number 0"},
		{"65536", Signal{}, "signal number 65536"},
		{"", Signal{}, "unknown signal"},
		{"B:", Signal{}, "unknown signal"},
	}
	for _, c := range cases {
		got, err := ParseSignal(c.in)
		if c.err != "" {
			if err == nil || !errors.Is(err, ErrSignal) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSignal(%q) = %+v, %v; want an ErrSignal naming %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseSignal(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if s := (Signal{Name: "USR1", Batch: true, Lead: 40 * time.Second}).String(); s != "B:USR1@40" {
		t.Errorf("String() = %q, want B:USR1@40", s)
	}
}

func FuzzSignal(f *testing.F) {
	for _, s := range []string{"B:USR1@40", "USR1", "10@600", "b:sigterm@0", "RB:USR2@65535", "BR:1", "B:", "@", "BUS", "R:x@1", "SIG@5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := ParseSignal(s)
		if err != nil {
			if !errors.Is(err, ErrSignal) {
				t.Fatalf("ParseSignal(%q): %v does not wrap ErrSignal", s, err)
			}
			return
		}
		if sig.Name == "" || sig.Lead < 0 || sig.Lead > maxSignalField*time.Second || sig.Lead%time.Second != 0 {
			t.Fatalf("ParseSignal(%q) = %+v", s, sig)
		}
		// Written back, it reads the same.
		back, err := ParseSignal(sig.String())
		if err != nil || back != sig {
			t.Fatalf("%q: %+v written %q read back as %+v, %v", s, sig, sig.String(), back, err)
		}
	})
}
