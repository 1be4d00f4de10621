// Package ndjson implements newline-delimited JSON framing: one JSON value per line, each line
// terminated by '\n'. It does not parse JSON; it only deals with line boundaries.
//
// [Reader] splits a byte stream into frames without allocating per frame in the common case and bounds
// the memory spent on a single line; an oversized line is skipped and reported with its first
// [HeadSize] bytes, and the stream stays usable. [Writer] writes whole frames, never interleaved: a
// frame is written with a Write call of its own when no other is in progress, and frames that arrive
// during a Write are written together, in order, with one Write call after it (group commit). A queued
// frame can be withdrawn by cancelling its context. [Writer.WriteFrameAsync] queues a copy of a frame
// and returns at once, for a producer that has more work to do than wait for the peer to read.
package ndjson
