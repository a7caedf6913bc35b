// Package pack is the packing evaluation: Run replays pod arrivals onto a
// placement.State under one placement policy and measures GPU
// fragmentation as the ATC'23 work ("Beware of Fragmentation") does;
// Evaluate runs it over openb node and pod lists (LoadNodes, LoadPods) for
// every policy and seed of a Spec, for "mirage pack-eval" and
// docs/results/packing.md. It imports only the placement pipeline and the
// provisioner's types: nothing of the chain evaluation in package eval.
package pack
