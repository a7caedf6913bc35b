// Package traces holds the canonical historical job record (Job) and
// streaming readers of public and site trace formats: the TACC sacct export,
// sacct --parsable2 and --json, the Standard Workload Format, Alibaba PAI
// openb pod lists and the Helios job log. It also generates synthetic
// LS6-like traces. It is a leaf: it imports nothing of mirage's.
package traces
