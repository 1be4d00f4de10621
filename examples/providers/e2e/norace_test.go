//go:build !race

package e2e

// raceEnabled: the tests run without the race detector, and so do the
// providers they build (which then need no cgo).
const raceEnabled = false
