//go:build race

package schematest

// Thorough is false under the race detector: see MutationLimit.
const Thorough = false
