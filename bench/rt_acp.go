package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// ACP returns the adapter for github.com/coder/acp-go-sdk: acp.NewConnection
// with a MethodHandler, acp.SendRequest[T] for calls.
func ACP() Runtime { return acpRT{} }

type acpRT struct{}

func (acpRT) Name() string { return "acp-go-sdk" }
func (acpRT) Key() string  { return "acp" }

func (acpRT) Open(r io.Reader, w io.Writer, svc *Service) Conn {
	c := &acpConn{r: r, w: w, log: &lastError{}}
	var h acp.MethodHandler
	if svc != nil {
		h = func(ctx context.Context, method string, params json.RawMessage) (any, *acp.RequestError) {
			res, err := serve(ctx, svc, method, params, decodeV1)
			switch {
			case errors.Is(err, errUnknownMethod):
				return nil, acp.NewMethodNotFound(method)
			case err != nil:
				return nil, acp.NewInvalidParams(err.Error())
			}
			return res, nil
		}
	}
	c.c = acp.NewConnection(h, w, r)
	c.c.SetLogger(slog.New(c.log))
	return c
}

// decodeV1 is how handlers of the encoding/json based runtimes decode params.
func decodeV1(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}

type acpConn struct {
	c   *acp.Connection
	r   io.Reader
	w   io.Writer
	log *lastError
}

func (c *acpConn) Call(ctx context.Context, method string, params, result any) error {
	switch res := result.(type) {
	case nil:
		return c.c.SendRequestNoResult(ctx, method, params)
	case *PromptResult:
		v, err := acp.SendRequest[PromptResult](c.c, ctx, method, params)
		*res = v
		return err
	case *BarrierResult:
		v, err := acp.SendRequest[BarrierResult](c.c, ctx, method, params)
		*res = v
		return err
	default:
		raw, err := acp.SendRequest[json.RawMessage](c.c, ctx, method, params)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, result)
	}
}

func (c *acpConn) Notify(ctx context.Context, method string, params any) error {
	return c.c.SendNotification(ctx, method, params)
}

func (c *acpConn) Done() <-chan struct{} { return c.c.Done() }

func (c *acpConn) Err() error {
	select {
	case <-c.c.Done():
	default:
		return nil
	}
	if msg := c.log.get(); msg != "" {
		return errors.New(msg)
	}
	return errors.New("connection closed")
}

// Close closes r and w (acp.Connection has no Close) and waits briefly for
// the connection to notice.
func (c *acpConn) Close() error {
	err := closeBoth(c.r, c.w)
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-c.c.Done():
	case <-t.C:
	}
	return err
}

// lastError is a slog.Handler that remembers the first error logged, so
// that a runtime which closes its connection on purpose (acp-go-sdk on a
// notification queue overflow) can say why.
type lastError struct {
	mu  sync.Mutex
	msg string
}

func (h *lastError) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (h *lastError) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.msg == "" {
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool {
			msg += fmt.Sprintf(" %s=%v", a.Key, a.Value)
			return true
		})
		h.msg = msg
	}
	return nil
}

func (h *lastError) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lastError) WithGroup(string) slog.Handler      { return h }

func (h *lastError) get() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msg
}
