//go:build race

package permission_test

const raceEnabled = true
