//go:build !race

package schematest

// Thorough is true without the race detector: see MutationLimit.
const Thorough = true
