// Package serve is how the stdio servers end a session: when the peer's
// input ends, when a write fails, or when their context ends.
package serve

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Until waits until conn ends or ctx does, then closes conn. It returns
// ctx's error when ctx ended first, else Ended(conn.Err()).
func Until(ctx context.Context, conn *rpc.Conn) error {
	select {
	case <-conn.Done():
	case <-ctx.Done():
		conn.Close()
		return ctx.Err()
	}
	conn.Close()
	return Ended(conn.Err())
}

// Ended is nil for a connection that ended because its input did (end of
// file, a closed pipe or file, a read deadline set to stop it), else err.
func Ended(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return err
}
