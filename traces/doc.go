// Package traces holds the canonical historical job record (Job) and
// streaming readers of public and site trace formats: the TACC sacct export,
// sacct --parsable2 and --json, the Standard Workload Format, Alibaba PAI
// openb pod lists and the Helios job log. It also generates synthetic
// LS6-like traces. It is a leaf: of mirage's packages it imports only
// slurm/slurmfmt (itself a leaf), whose parsers read Slurm durations and
// TRES strings.
//
// Contract:
//
//   - Open(path, Options) returns a Reader whose Next yields one Job at a
//     time and io.EOF at the end; All adapts it to a range-over-func
//     iterator. Readers never load a whole trace (the sacct JSON reader
//     decodes one element of "jobs" at a time).
//   - The format is sniffed from the first bytes unless Options.Format is
//     set; gzip input (magic 1f 8b) is decompressed transparently.
//   - A malformed row is a *ParseError naming file, line, field, what was
//     wanted and what was found (errors.Is(err, ErrMalformed) holds). With
//     Options.SkipBad such rows are skipped and counted (Reader.Skipped,
//     Reader.Errors keeps the first MaxKeptErrors); an unreadable header is
//     an error either way.
//   - Zone-less timestamps are read in Options.Location; the LS6 export
//     defaults to America/Chicago (tzdata is embedded), the others to UTC.
//   - Writers (Convert, WriteSynth) write through internal/safefile: a
//     temporary file in the target directory renamed over the target, so
//     a failure leaves nothing partial.
//   - Stats are computed in one pass (StatsBuilder) with a few bytes per
//     job; Synth is deterministic for a seed.
package traces
