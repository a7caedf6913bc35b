package slurm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
)

// TestSbatchTime reads -t values (moved from cmd/mirage's TestParseSlurmTime).
// "0" now asks for no limit, as sbatch(1) says ("A time limit of zero
// requests that no time limit be imposed"); cmd/mirage refused it before.
func TestSbatchTime(t *testing.T) {
	cases := []struct {
		in        string
		want      time.Duration
		unlimited bool
		err       bool
	}{
		{"30", 30 * time.Minute, false, false},
		{"30:15", 30*time.Minute + 15*time.Second, false, false},
		{"2:00:00", 2 * time.Hour, false, false},
		{"1-12", 36 * time.Hour, false, false},
		{"1-0:30", 24*time.Hour + 30*time.Minute, false, false},
		{"2-1:2:3", 49*time.Hour + 2*time.Minute + 3*time.Second, false, false},
		{"UNLIMITED", 0, true, false},
		{"0", 0, true, false},
		{"", 0, false, true},
		{"1:2:3:4", 0, false, true},
		{"x", 0, false, true},
		{"-5", 0, false, true},
		{"1-x", 0, false, true},
		{"N/A", 0, false, true},
		{"Partition_Limit", 0, false, true},
	}
	for _, c := range cases {
		sh, err := ParseSbatchArgs([]string{"-t", c.in})
		if (err != nil) != c.err || sh.TimeLimit != c.want || sh.Unlimited != c.unlimited {
			t.Errorf("-t %q: %+v, %v; want %v (unlimited %v), err %v", c.in, sh, err, c.want, c.unlimited, c.err)
		}
	}
}

func TestParseSbatchArgs(t *testing.T) {
	cases := []struct {
		args []string
		want Shape
		gpus int
		err  string
	}{
		{[]string{"-t", "90", "-N", "2", "--gres=gpu:a100:4", "-A", "vision", "-p", "gpu", "-J", "llm"},
			Shape{TimeLimit: 90 * time.Minute, Nodes: 2, GPUsPerNode: 4, GPUType: "a100", Account: "vision", Partition: "gpu", Name: "llm"}, 8, ""},
		{[]string{"--time=1:00:00", "--nodes=3-4", "--gpus=6", "--account=a", "--partition=p", "--job-name=x", "--mem=8G"},
			Shape{TimeLimit: time.Hour, Nodes: 3, GPUsTotal: 6, Account: "a", Partition: "p", Name: "x"}, 6, ""},
		{[]string{"-t10", "-N1", "-G2"}, Shape{TimeLimit: 10 * time.Minute, Nodes: 1, GPUsTotal: 2}, 2, ""},
		{[]string{"--gpus-per-node=a100:2", "-N", "2"}, Shape{Nodes: 2, GPUsPerNode: 2, GPUType: "a100"}, 4, ""},
		{[]string{"--gres=gpu"}, Shape{GPUsPerNode: 1}, 1, ""},
		// sbatch(1) --gres: every gpu entry counts (cmd/mirage read the first only).
		{[]string{"--gres=gpu:a100:2,gpu:v100:1"}, Shape{GPUsPerNode: 3, GPUType: "v100"}, 3, ""},
		{[]string{"-t", "0"}, Shape{Unlimited: true}, 0, ""},
		{[]string{"-p", "gpu", "--", "-p", "cpu"}, Shape{Partition: "gpu"}, 0, ""}, // "--" ends the options
		// --signal, "=v" or " v": when Slurm stops each segment to checkpoint
		{[]string{"--signal=B:USR1@40", "-t", "3"}, Shape{TimeLimit: 3 * time.Minute, Signal: slurmfmt.Signal{Name: "USR1", Batch: true, Lead: 40 * time.Second}}, 0, ""},
		{[]string{"--signal", "USR2"}, Shape{Signal: slurmfmt.Signal{Name: "USR2", Lead: time.Minute}}, 0, ""},
		{[]string{"--signal=B:USR1@x"}, Shape{}, 0, `--signal "B:USR1@x"`},
		{[]string{"--signal"}, Shape{}, 0, "--signal needs a value"},
		{[]string{"--comment=x"}, Shape{}, 0, "--comment: mirage sets it"},
		{[]string{"-d", "afterok:1"}, Shape{}, 0, "-d: mirage sets it"},
		{[]string{"--array=1-3"}, Shape{}, 0, "job arrays cannot be chained"},
		{[]string{"-t"}, Shape{}, 0, "-t needs a value"},
		{[]string{"-N", "zero"}, Shape{}, 0, `-N "zero"`},
		{[]string{"--gres=gpu:a100:x"}, Shape{}, 0, "GPU count"},
		{[]string{"-G", "-2"}, Shape{}, 0, "negative GPU count"},
	}
	for _, c := range cases {
		got, err := ParseSbatchArgs(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || got.GPUs() != c.gpus {
			t.Errorf("%q: %+v (gpus %d), %v; want %+v (gpus %d)", c.args, got, got.GPUs(), err, c.want, c.gpus)
		}
	}
}

func TestParseBatchScript(t *testing.T) {
	script := "#!/bin/bash\n#SBATCH -t 2:00:00 # two hours\n\n# a comment\n#SBATCH --gres=gpu:2\n#SBATCH -N 2\necho hi\n#SBATCH -p ignored\n"
	sh, err := ParseBatchScript(strings.NewReader(script))
	// the last #SBATCH comes after the first command: sbatch ignores it
	want := Shape{TimeLimit: 2 * time.Hour, Nodes: 2, GPUsPerNode: 2}
	if err != nil || sh != want {
		t.Fatalf("got %+v, %v; want %+v", sh, err, want)
	}
	// The command line's --signal wins over the script's; a command line
	// without one keeps it.
	sig := slurmfmt.Signal{Name: "USR1", Batch: true, Lead: 10 * time.Minute}
	if m := (Shape{Signal: sig}).Merge(Shape{Signal: slurmfmt.Signal{Name: "TERM", Lead: time.Minute}}); m.Signal.Name != "TERM" || m.Signal.Lead != time.Minute {
		t.Errorf("merge of --signal: %+v", m.Signal)
	}
	if m := (Shape{Signal: sig}).Merge(Shape{Partition: "gpu"}); m.Signal != sig {
		t.Errorf("merge without --signal: %+v, want the script's %+v", m.Signal, sig)
	}
	merged := sh.Merge(Shape{TimeLimit: time.Hour, Partition: "gpu"})
	if merged.TimeLimit != time.Hour || merged.Nodes != 2 || merged.Partition != "gpu" || merged.GPUs() != 4 {
		t.Errorf("merge: %+v", merged)
	}
	// The command line's -t 0 / UNLIMITED overrides the script's limit, as
	// in sbatch (cmd/mirage kept the script's limit before).
	if m := sh.Merge(Shape{Unlimited: true}); m.TimeLimit != 0 || !m.Unlimited {
		t.Errorf("merge of an unlimited -t: %+v", m)
	}
	for _, bad := range []string{"", "echo no shebang\n", "#!/bin/sh\n#SBATCH --comment=x\n"} {
		if _, err := ParseBatchScript(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseSbatchArgs: no negative shape, and options → Shape → SbatchArgs
// → ParseSbatchArgs → SbatchArgs is stable (SbatchArgs is the inverse).
func FuzzParseSbatchArgs(f *testing.F) {
	for _, s := range []string{"-t 10 -N 2 --gres=gpu:a100:4", "--time=1-2:3:4 --gpus=x", "-p", "-N 3 -G a100:5 -A team -J x",
		"--gpus-per-node=2 -t 0", "--gres=gpu:2,gpu:v100:1 -p gpu --mem=4G", "-t 2:00 --nodes=2-4", "-t 3 --signal=B:USR1@40",
		"--signal USR1 -N 1", "--signal=RB:10@65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseSbatchArgs(strings.Fields(s))
		if err != nil {
			return
		}
		if sh.TimeLimit < 0 || sh.Nodes < 0 || sh.GPUs() < 0 || sh.Signal.Lead < 0 {
			t.Fatalf("%q: negative shape %+v", s, sh)
		}
		a1, err := SbatchArgs(sh.Request("job.sh"), "")
		if err != nil {
			return // a value SbatchArgs refuses (a space in an account, ...)
		}
		sh2, err := ParseSbatchArgs(a1)
		if err != nil {
			t.Fatalf("%q: SbatchArgs wrote %q, which does not parse: %v", s, a1, err)
		}
		a2, err := SbatchArgs(sh2.Request("job.sh"), "")
		if err != nil || !slices.Equal(a1, a2) {
			t.Fatalf("%q: %q parsed to %+v, written again as %q, %v", s, a1, sh2, a2, err)
		}
	})
}
