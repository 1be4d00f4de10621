// Package frame is the seam between bridgekit's connection engine (runtime/rpc) and the transports that
// carry its messages: a Transport reads and writes whole frames, one JSON value each, and owns the framing
// (newlines on a byte stream, messages on a WebSocket, bodies and events over HTTP). The engine owns
// everything about the frames themselves: decoding, correlation, dispatch, bounds on what it queues.
//
// A transport is small on purpose, in the shape of the MCP Go SDK's Connection and x/exp/jsonrpc2's
// Reader and Writer, so that a new one fits with no change to the engine.
package frame

import (
	"context"
	"errors"
	"strconv"
)

// Reader reads whole frames. Read is called from one goroutine at a time (the engine's reader).
type Reader interface {
	// Read returns the next inbound frame: one JSON value with no framing around it (no trailing newline).
	// The slice is valid until the next call to Read; the engine copies what it keeps.
	//
	// At the clean end of input Read returns io.EOF (wrapped or not). A frame over the transport's size
	// limit is consumed and reported as a *TooLargeError; the stream stays usable and the next Read goes
	// on with the next frame. Any other error ends the input. Read returns promptly once ctx ends or the
	// transport is closed.
	Read(ctx context.Context) ([]byte, error)
}

// Writer writes whole frames. Write may be called from several goroutines at once; frames never
// interleave.
type Writer interface {
	// Write writes one frame: one JSON value with no framing around it (no trailing newline). It returns
	// once the frame has been handed to the transport's peer-facing stream (or queued within the
	// transport's own byte bound), or with ctx's error if ctx ends first: a frame still waiting is then
	// dropped. frame is not retained after Write returns. After a write error, later calls fail too.
	Write(ctx context.Context, frame []byte) error
}

// Transport is a bidirectional frame transport.
type Transport interface {
	Reader
	Writer
	// Close ends the transport: it unblocks a Read or Write in progress (for most underlying streams)
	// and makes later calls fail. It is idempotent.
	Close() error
}

// DefaultMaxFrame is the frame size limit transports use when given none: 16 MiB.
const DefaultMaxFrame = 16 << 20

// HeadSize is how much of an over-long frame a TooLargeError keeps: enough for a protocol to tell what
// the frame was and its id, so that a request is still answered under its id.
const HeadSize = 1 << 10

// ErrTooLarge is matched (with errors.Is) by a *TooLargeError.
var ErrTooLarge = errors.New("frame too large")

// TooLargeError reports an inbound frame over the transport's limit, consumed and discarded but for its
// head.
type TooLargeError struct {
	Limit int    // the limit in bytes
	Size  int    // the frame's size in bytes, as far as the transport read it before giving up (>= Limit+1)
	Head  []byte // the frame's first HeadSize bytes (all of it, if shorter)
}

func (e *TooLargeError) Error() string {
	return "frame exceeds the " + strconv.Itoa(e.Limit) + "-byte limit"
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }
