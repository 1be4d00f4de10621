package rpc

import (
	"context"
	"log/slog"
	"time"

	"github.com/bridgekit/bridgekit/runtime/redact"
)

// Direction says which way a frame went.
type Direction uint8

const (
	In  Direction = iota + 1 // read from the peer
	Out                      // written to the peer
)

var directionNames = [...]string{In: "in", Out: "out"}

func (d Direction) String() string { return enumName(directionNames[:], int(d), "Direction") }

// Traffic is one frame that crossed a connection, for Options.Observe.
type Traffic struct {
	Dir  Direction
	Time time.Time
	Size int // the frame's length in bytes (without the newline of an NDJSON line)
	// Line is the frame, valid only during the call: copy what must outlive it. For a frame over
	// Options.MaxFrame it is only its first frame.HeadSize bytes.
	Line []byte
}

// observeIn reports an inbound line to Options.Observe.
func (c *Conn) observeIn(line []byte, size int) {
	c.opts.Observe(Traffic{Dir: In, Time: time.Now(), Size: size, Line: line})
}

// observeOut reports an outbound frame to Options.Observe.
func (c *Conn) observeOut(frame []byte) {
	c.opts.Observe(Traffic{Dir: Out, Time: time.Now(), Size: len(frame), Line: frame})
}

// MaxLoggedLine bounds, in bytes, how much of a frame SlogObserver logs.
const MaxLoggedLine = 64 << 10

// SlogObserver returns an Options.Observe function that logs every frame to l at level Debug, as "rpc: frame"
// with its direction ("in" or "out"), size and line (cut to MaxLoggedLine bytes). Secret-looking values are
// masked first, with runtime/redact's Redactor.JSON (red, or token shapes only if red is nil): members whose
// names look secret, and strings shaped like tokens. Records are handled on the goroutine that reads or
// writes, so l's handler should be quick; when Debug is disabled a frame costs little more than the check.
func SlogObserver(l *slog.Logger, red *redact.Redactor) func(Traffic) {
	return func(t Traffic) {
		ctx := context.Background()
		if !l.Enabled(ctx, slog.LevelDebug) {
			return
		}
		line := string(red.JSON(t.Line))
		l.LogAttrs(ctx, slog.LevelDebug, "rpc: frame", slog.String("dir", t.Dir.String()), slog.Int("size", t.Size),
			slog.String("line", Truncate(line, MaxLoggedLine)))
	}
}
