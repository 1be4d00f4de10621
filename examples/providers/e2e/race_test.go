//go:build race

package e2e

// raceEnabled: the tests run with the race detector, and so do the
// providers they build.
const raceEnabled = true
