// Package ndjson implements newline-delimited JSON framing: one JSON value per line, each line ended by
// '\n'. It does not parse JSON; it only deals with line boundaries.
//
// [Transport] is the frame transport (package frame) of a byte stream, such as a child's stdio: the
// connection engine (package rpc) reads and writes whole frames through it. [Reader] splits a stream into
// frames without allocating per frame in the common case, bounds the memory spent on one line and reports an
// over-long line as a *frame.TooLargeError with its first [HeadSize] bytes, the stream staying usable.
// [Writer] writes whole frames, each followed by a newline, never interleaved, and writes the frames that
// wait during a Write with one Write after it (group commit).
package ndjson
