// Package eval runs replay experiments of submission policies in the
// simulator and turns their outcomes into metrics and reports (HTML with
// plots, Markdown, JSON).
//
// Contract: experiments produce Samples, one per chain hand-off (a
// predecessor/successor pair); everything downstream (metrics, confidence
// intervals, reports, the merge of job-array cells) reads only Samples and
// the run's Provenance, so a report can be rebuilt from its JSON.
//
// The root keeps the experiments (specs, cells, sweeps, job arrays, the
// merge of cells' files, the site grid). The protocols that produce samples
// are package eval/protocol, the sample and provenance types and the metrics
// over them package eval/metrics, reports package eval/report; the packing
// evaluation is package eval/pack.
package eval
