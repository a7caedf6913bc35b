// Package dataset generates the training data of the learned policies and
// the wait predictor in the simulator.
//
// GenerateChainData injects chains into a scenario (scenario.Protocol) and
// probes, in forks, the outcome of submitting the successor at every
// decision tick: a ChainEpisode is the exact table of the environment one
// chain presents. GenerateWaitData records, for every recorded job, the
// wait-schema features just before it arrived and its simulated wait (and,
// optionally, Slurm's own estimate). Rows and the targets flatten episodes
// into a models.Dataset.
//
// Contract: generation is deterministic for a scenario, protocol and seed,
// whatever the number of workers; datasets are saved as gzip'd gob
// (SaveChainData) and refused when malformed (models.ErrBadModel).
package dataset
