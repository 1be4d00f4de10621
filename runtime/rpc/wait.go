package rpc

import (
	"context"
	"errors"
	"io"
	"os"
)

// Wait waits until the connection has finished or ctx ends. It returns nil for a clean end: the peer ended
// its input (end of file, a closed pipe, a read deadline set to stop it), and so every request read was
// answered and every reply written. Otherwise it returns what ended the connection (a failed write; ErrClosed
// after Close) or, when ctx ended first, ctx's error, leaving the connection open. Err, by contrast, always
// says why the connection finished, a clean end included (it then matches io.EOF).
func (c *Conn) Wait(ctx context.Context) error {
	select {
	case <-c.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	err := c.Err()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return err
}
