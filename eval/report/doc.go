// Package report assembles an evaluation's report from its samples and
// provenance (package eval/metrics) and writes it: report.json, which
// round-trips, and report.md and report.html (plots, verdicts, tables),
// both rendered from the JSON form alone. Merge pools the reports of an
// experiment's cells; Verify checks a written report against its JSON.
//
// Contract: a report is a function of its samples, whole runs, provenance,
// bootstrap settings and zero tolerance; it imports eval/metrics and no
// other eval package (never eval itself).
package report
