// Package ndjson implements newline-delimited JSON framing: one JSON value per line, each line ended by
// '\n'. It does not parse JSON; it only deals with line boundaries.
//
// [Reader] splits a stream into frames without allocating per frame in the common case, bounds the
// memory spent on one line and reports an over-long line with its first [HeadSize] bytes, the stream
// staying usable. [Writer] writes whole frames, never interleaved, and batches the frames that arrive
// during a Write into one Write after it (group commit).
package ndjson
