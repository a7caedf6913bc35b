// Package chainops holds the chain operations of the CLI outside the
// daemon's cycle, built on the provisioner's types and ports: registering a
// chain and submitting its first segment (RegisterChain, SubmitFirst),
// cancelling (CancelChain), recovering chains from the backend alone
// (RecoverChains), the hand-off a successor runs (StopPredecessor), and the
// views of status and log with their text and JSON (ChainStatus, ChainLog,
// ReportJSON, WriteReport).
//
// Contract: no adapter and no model is imported (internal/archtest); the
// backend, the store, the clock and the waiting come in as the
// provisioner's ports and functions, so every operation runs the same on
// Slurm, Kubernetes and the simulator. The decisions themselves stay in
// provisioner.Step: an operation here records or performs, it does not
// choose when a segment is submitted.
package chainops
