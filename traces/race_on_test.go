//go:build race

package traces

// raceEnabled: the race detector's shadow memory inflates resident memory.
const raceEnabled = true
