package bench

import (
	"context"
	"errors"
	"io"
	"sync"

	"golang.org/x/exp/jsonrpc2"
)

// XExp returns the adapter for golang.org/x/exp/jsonrpc2 with its RawFramer
// (JSON values back to back) and its default, sequential handler queue.
func XExp() Runtime { return xexpRT{} }

type xexpRT struct{}

func (xexpRT) Name() string { return "x/exp/jsonrpc2" }
func (xexpRT) Key() string  { return "xexp" }

func (xexpRT) Open(r io.Reader, w io.Writer, svc *Service) Conn {
	opts := jsonrpc2.ConnectionOptions{Framer: jsonrpc2.RawFramer()}
	if svc != nil {
		opts.Handler = jsonrpc2.HandlerFunc(func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
			res, err := serve(ctx, svc, req.Method, req.Params, decodeV1)
			if errors.Is(err, errUnknownMethod) {
				return nil, jsonrpc2.ErrMethodNotFound
			}
			return res, err
		})
	}
	c, err := jsonrpc2.Dial(context.Background(), streamDialer{rwc{r, w}}, opts)
	if err != nil {
		// Dial only fails when the dialer does, and ours does not.
		panic(err)
	}
	return &xexpConn{c: c}
}

type streamDialer struct{ s io.ReadWriteCloser }

func (d streamDialer) Dial(context.Context) (io.ReadWriteCloser, error) { return d.s, nil }

type xexpConn struct {
	c    *jsonrpc2.Connection
	once sync.Once
	done chan struct{}
	err  error
}

func (c *xexpConn) Call(ctx context.Context, method string, params, result any) error {
	return c.c.Call(ctx, method, params).Await(ctx, result)
}

func (c *xexpConn) Notify(ctx context.Context, method string, params any) error {
	return c.c.Notify(ctx, method, params)
}

// Done starts, on first use, a goroutine waiting for the connection to end,
// so that idle connections are not charged for it.
func (c *xexpConn) Done() <-chan struct{} {
	c.once.Do(func() {
		c.done = make(chan struct{})
		go func() {
			c.err = c.c.Wait()
			close(c.done)
		}()
	})
	return c.done
}

func (c *xexpConn) Err() error {
	select {
	case <-c.Done():
		if c.err == nil {
			return errors.New("connection closed")
		}
		return c.err
	default:
		return nil
	}
}

func (c *xexpConn) Close() error { return c.c.Close() }
