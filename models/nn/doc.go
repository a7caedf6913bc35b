// Package nn holds the neural learners, built on gorgonia: the multi-layer
// perceptron (MLP, kind mlp) and the two reinforcement learners that use it,
// the Deep Q-Network (DQN, kind dqn) and REINFORCE policy gradient (PG, kind
// pg), which learn on any Env (the chain-submission environments are
// models/train's TableEnv and SimEnv).
//
// Contract: the package registers KindMLP, KindDQN and KindPG with
// models.RegisterLoader in init; a learned policy is served as a
// PolicyNetModel whose output is the preference for submitting
// (≥ 0: submit). Learning is seeded: the same seed and environment give the
// same network.
package nn
