// Package ndjson implements newline-delimited JSON framing: one JSON value
// per line, each line terminated by '\n'.
//
// [Reader] splits a byte stream into frames without allocating per frame in
// the common case and bounds the memory spent on a single line; an oversized
// line is skipped and reported, and the stream stays usable. [Writer] writes
// whole frames with a single Write call each, serialising concurrent writers
// with a lock that honours context cancellation.
//
// The package does not parse JSON; it only deals with line boundaries.
package ndjson
