// Package term answers the two questions the CLI asks of its output
// streams: is this a terminal (IsTerminal), and how is progress shown
// (Progress, a one-line bar redrawn in place). A Progress without a writer
// draws nothing, so commands hand it their stderr only when IsTerminal says
// so and stay silent on pipes and in logs.
package term
