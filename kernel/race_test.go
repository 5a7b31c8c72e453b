//go:build race

package kernel

// raceSlowdown is how many times slower, and bigger, code runs under the
// race detector than without it (its documentation gives 2–20× for time
// and 5–10× for memory): bounds of wall time and resident memory that
// tests check are this much wider in such builds.
const raceSlowdown = 10
