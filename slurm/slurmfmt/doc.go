// Package slurmfmt reads and writes Slurm's small text formats: durations
// (time limits), hostlists, GRES strings, TRES strings and sbatch --signal
// values. It is the one parser of each for the whole module; traces, sim,
// slurm and cmd/mirage call it instead of keeping their own.
//
// Contract: pure functions of their arguments, standard library only, no
// package of this module imported (traces depends on it and is a leaf).
// Every parser is fuzzed (fuzz_test.go). Where Slurm prints a special word
// instead of a value, the parser says which meaning it has (Kind for
// durations) and leaves the decision of what that meaning implies to the
// caller; the words and their meanings are listed once, in meaningOf.
//
// Sources for the syntax, quoted beside the code that follows them:
//   - sbatch(1) --time and Slurm's src/common/parse_time.c (time_str2secs,
//     secs2time_str, mins2time_str) for durations;
//   - scontrol(1) "show hostnames" and Slurm's src/common/hostlist.c for
//     hostlists;
//   - slurm.conf(5) "Gres", gres.conf(5) and sbatch(1) --gres for GRES;
//   - sacct(1) AllocTRES/ReqTRES and the TRES page (tres.html) for TRES;
//   - sbatch(1) --signal and Slurm's src/common/proc_args.c (get_signal_opts,
//     sig_name2num) for signals.
package slurmfmt
