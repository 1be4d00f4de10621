//go:build race

package ndjson

const raceEnabled = true
