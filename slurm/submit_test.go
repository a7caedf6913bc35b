package slurm

import (
	"context"
	"errors"
	"github.com/mirage-gpu/mirage/slurm/slurmfmt"
	"slices"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestSbatchArgs(t *testing.T) {
	cases := []struct {
		name   string
		req    provisioner.SubmitRequest
		output string
		want   []string
	}{
		{
			name: "minimal",
			req:  provisioner.SubmitRequest{Script: "/home/u/job.sh"},
			want: []string{"--parsable", "--", "/home/u/job.sh"},
		},
		{
			name: "every field",
			req: provisioner.SubmitRequest{
				Name: "train", Script: "job.sh", Args: []string{"--mem=4G", "--signal=B:USR1@120"},
				Account: "teama", Partition: "gpu", QOS: "normal",
				TimeLimit: 90*time.Minute + 30*time.Second, // 0 days, 1 h 30 min 30 s
				Nodes:     2, GPUs: 8, GPUType: "a100",     // 8 GPUs over 2 nodes: 4 per node
				Comment: "mirage:c1/3.0", Dependency: slurmfmt.AfterAny("41"),
				Begin:    time.Date(2026, 11, 29, 4, 5, 6, 0, time.FixedZone("CET", 3600)), // rendered in its own zone
				NodeList: []string{"n1", "n2"}, Exclude: []string{"n3"},
				Env:     map[string]string{"B": "2", "A": "x=y z"},
				WorkDir: "/scratch/run",
			},
			output: "/scratch/logs/%x-%j.out",
			want: []string{"--parsable", "--job-name=train", "--account=teama", "--partition=gpu", "--qos=normal",
				"--time=0-01:30:30", "--nodes=2", "--gres=gpu:a100:4", "--comment=mirage:c1/3.0",
				"--dependency=afterany:41", "--begin=2026-11-29T04:05:06", "--nodelist=n1,n2", "--exclude=n3", "--export=ALL",
				"--chdir=/scratch/run", "--output=/scratch/logs/%x-%j.out",
				"--mem=4G", "--signal=B:USR1@120", "--", "job.sh"},
		},
		{
			// 6 GPUs over 4 nodes do not divide: a job total.
			name: "uneven GPUs are a job total",
			req:  provisioner.SubmitRequest{Script: "j", Nodes: 4, GPUs: 6},
			want: []string{"--parsable", "--nodes=4", "--gpus=6", "--", "j"},
		},
		{
			// Without a node count the script's #SBATCH -N decides; --gpus keeps the total exact.
			name: "no node count: job total with type",
			req:  provisioner.SubmitRequest{Script: "j", GPUs: 2, GPUType: "tesla"},
			want: []string{"--parsable", "--gpus=tesla:2", "--", "j"},
		},
		{
			// 2 days 3 h 4 min 5.2 s rounds up to the next second: 2-03:04:06.
			name: "time rounds up",
			req:  provisioner.SubmitRequest{Script: "j", TimeLimit: 51*time.Hour + 4*time.Minute + 5200*time.Millisecond},
			want: []string{"--parsable", "--time=2-03:04:06", "--", "j"},
		},
		{
			name:   "caller's --output wins",
			req:    provisioner.SubmitRequest{Script: "j", Args: []string{"-o", "mine.out"}},
			output: "/logs/%j.out",
			want:   []string{"--parsable", "-o", "mine.out", "--", "j"},
		},
		{
			// Metacharacters stay inside one argument each; the script after "--" cannot be an option.
			name: "metacharacters verbatim",
			req: provisioner.SubmitRequest{Script: "-rf", Name: "$(touch x); `id` 'q' \"d\"",
				Comment: "a;b|c&d>e"},
			want: []string{"--parsable", "--job-name=$(touch x); `id` 'q' \"d\"", "--comment=a;b|c&d>e", "--", "-rf"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SbatchArgs(tc.req, tc.output)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("SbatchArgs =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

func TestSbatchArgsRefuses(t *testing.T) {
	base := func() provisioner.SubmitRequest { return provisioner.SubmitRequest{Script: "j.sh"} }
	cases := map[string]func(r *provisioner.SubmitRequest){
		"no script":             func(r *provisioner.SubmitRequest) { r.Script = "" },
		"NUL in env value":      func(r *provisioner.SubmitRequest) { r.Env = map[string]string{"A": "1\x002"} },
		"sbatch's own env key":  func(r *provisioner.SubmitRequest) { r.Env = map[string]string{"SBATCH_QOS": "x"} },
		"Slurm's env key":       func(r *provisioner.SubmitRequest) { r.Env = map[string]string{"SLURM_CONF": "/x"} },
		"bad env key":           func(r *provisioner.SubmitRequest) { r.Env = map[string]string{"A-B": "1"} },
		"env key with digit":    func(r *provisioner.SubmitRequest) { r.Env = map[string]string{"1A": "1"} },
		"newline in name":       func(r *provisioner.SubmitRequest) { r.Name = "a\nb" },
		"unit separator":        func(r *provisioner.SubmitRequest) { r.Comment = "a\x1fb" },
		"space in account":      func(r *provisioner.SubmitRequest) { r.Account = "team a" },
		"comma in node":         func(r *provisioner.SubmitRequest) { r.NodeList = []string{"n1,n2"} },
		"empty node":            func(r *provisioner.SubmitRequest) { r.Exclude = []string{""} },
		"negative GPUs":         func(r *provisioner.SubmitRequest) { r.GPUs = -1 },
		"colon in GPU type":     func(r *provisioner.SubmitRequest) { r.GPUType = "a:b"; r.GPUs = 1 },
		"control in workdir":    func(r *provisioner.SubmitRequest) { r.WorkDir = "/tmp/\x00" },
		"space in dependency":   func(r *provisioner.SubmitRequest) { r.Dependency = slurmfmt.AfterAny("1 2") },
		"negative time":         func(r *provisioner.SubmitRequest) { r.TimeLimit = -time.Minute },
		"control in script":     func(r *provisioner.SubmitRequest) { r.Script = "j\r.sh" },
		"control in partition":  func(r *provisioner.SubmitRequest) { r.Partition = "p\t" },
		"negative node count":   func(r *provisioner.SubmitRequest) { r.Nodes = -2 },
		"DEL character in name": func(r *provisioner.SubmitRequest) { r.Name = "a\x7f" },
	}
	for name, mod := range cases {
		r := base()
		mod(&r)
		if args, err := SbatchArgs(r, ""); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: SbatchArgs = %q, %v; want ErrBadRequest", name, args, err)
		}
	}
}

// TestSbatchEnv: the job's variables travel in sbatch's environment, sorted,
// values verbatim (',' and spaces included: they are not in a --export list).
func TestSbatchEnv(t *testing.T) {
	got, err := SbatchEnv(provisioner.SubmitRequest{Script: "j", Env: map[string]string{"MIRAGE_SEGMENT": "2", "A": "x=y, z"}})
	want := []string{"A=x=y, z", "MIRAGE_SEGMENT=2"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("SbatchEnv = %q, %v; want %q", got, err, want)
	}
	if got, err := SbatchEnv(provisioner.SubmitRequest{Script: "j"}); err != nil || len(got) != 0 {
		t.Errorf("SbatchEnv without Env = %q, %v", got, err)
	}
}

// TestSubmitPassesEnvToSbatch: Submit runs sbatch with the job's variables
// in its environment and --export=ALL, never a variable list in --export.
func TestSubmitPassesEnvToSbatch(t *testing.T) {
	r := &fakeRunner{replies: map[string][]reply{"sbatch": {{out: "42\n"}}}}
	c, _ := newTestClient(t, r, nil)
	id, err := c.Submit(context.Background(), provisioner.SubmitRequest{Script: "/x.sh", Env: map[string]string{"MIRAGE_CHAIN": "c1", "MIRAGE_PREV_JOB": ""}})
	if err != nil || id != "42" || len(r.calls) != 1 {
		t.Fatalf("Submit = %q, %v; calls %v", id, err, r.calls)
	}
	if got := r.calls[0]; !slices.Equal(got.env, []string{"MIRAGE_CHAIN=c1", "MIRAGE_PREV_JOB="}) || !slices.Contains(got.args, "--export=ALL") {
		t.Errorf("sbatch ran with args %q, env %q", got.args, got.env)
	}
}

// TestBeginInClusterZone: the Client renders a begin time in its zone
// (Config.TZ, the TZ its commands run with) for sbatch --begin: 03:00 UTC
// is 04:00 in Berlin in November (CET, UTC+1).
func TestBeginInClusterZone(t *testing.T) {
	r := &fakeRunner{replies: map[string][]reply{"sbatch": {{out: "42\n"}}}}
	c, _ := newTestClient(t, r, func(cfg *Config) { cfg.TZ = "Europe/Berlin" })
	begin := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	if _, err := c.Submit(context.Background(), provisioner.SubmitRequest{Script: "/x.sh", Begin: begin}); err != nil {
		t.Fatal(err)
	}
	if len(r.calls) != 1 || !slices.Contains(r.calls[0].args, "--begin=2026-11-29T04:00:00") {
		t.Errorf("calls %v: want sbatch --begin=2026-11-29T04:00:00", r.calls)
	}
}

func TestValidJobID(t *testing.T) {
	for _, ok := range []string{"1", "123", "7_3", "7_[2-9%2]", "7_[1,3]"} {
		if err := validJobID(ok); err != nil {
			t.Errorf("validJobID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-1", "--user=x", "1a", "_3", "7_", "7_x", "1 2", "7_[1-2];x"} {
		if validJobID(bad) == nil {
			t.Errorf("validJobID(%q) accepted", bad)
		}
	}
}
