// Package middleware holds ready-made rpc.Middleware: Logging, one log/slog
// record per request and notification a connection serves, with its
// payloads redacted by runtime/redact; and Recover, which turns a handler's
// panic into a -32603 answer and an error record with the stack.
//
// Give them to any connection through rpc.Options.Middleware, the first
// outermost (servers/host and servers/service take them in Options.Conn):
//
//	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)) // never the protocol's stdout
//	opts := &rpc.Options{Middleware: []rpc.Middleware{
//		middleware.Logging(logger, nil),
//		middleware.Recover(logger),
//	}}
//	conn := acp.NewConn(os.Stdin, os.Stdout, handlers, opts)
//
// Logging outermost sees what Recover made of a panic (the -32603 answer);
// Recover innermost catches the panic nearest the handler.
package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// DefaultMaxPayload is how many bytes of a payload Logging quotes unless
// LoggingOptions.MaxPayload says otherwise.
const DefaultMaxPayload = 1024

// LoggingOptions configures Logging. The zero value is ready to use.
type LoggingOptions struct {
	// Level is the level of the record of a request or notification that
	// succeeds (default slog.LevelInfo). One that fails is logged at
	// slog.LevelWarn, or at Level when that is higher.
	Level slog.Level
	// Payloads adds each request's params and result (or a notification's
	// params) to its record, redacted by Redactor and cut at MaxPayload
	// bytes. They are encoded only when the record is logged.
	Payloads bool
	// Redactor masks the payloads and error texts quoted; nil masks token
	// shapes and the values of secret-named members (redact's nil
	// Redactor). Give it redact.FromEnv(os.Environ()) to mask this
	// process's secrets as well.
	Redactor *redact.Redactor
	// MaxPayload bounds each quoted payload in bytes (default
	// DefaultMaxPayload); a longer one is cut and marked with "…".
	MaxPayload int
}

// Logging returns middleware that logs every inbound request and
// notification on l once it has been handled: its kind, method, qualifier
// (AgentPM's role or hook), id, duration and, for a failure, the error
// (its code for an *rpc.Error). Names and texts quoted from the peer are
// cut at rpc.MaxEcho bytes and redacted. A nil l discards.
func Logging(l *slog.Logger, o *LoggingOptions) rpc.Middleware {
	var opts LoggingOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	failLevel := max(opts.Level, slog.LevelWarn)
	return func(next rpc.Handler) rpc.Handler {
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			start := time.Now()
			res, err := next.Handle(ctx, req)
			level := opts.Level
			if err != nil {
				level = failLevel
			}
			if !l.Enabled(ctx, level) {
				return res, err
			}
			attrs := make([]slog.Attr, 0, 8)
			kind := "request"
			if req.Kind == rpc.KindNotification {
				kind = "notification"
			}
			attrs = append(attrs, slog.String("kind", kind), slog.String("method", opts.Redactor.String(rpc.Truncate(req.Method, rpc.MaxEcho))))
			if req.Qualifier != "" {
				attrs = append(attrs, slog.String("qualifier", opts.Redactor.String(rpc.Truncate(req.Qualifier, rpc.MaxEcho))))
			}
			if !req.ID.IsZero() {
				attrs = append(attrs, slog.String("id", opts.Redactor.String(rpc.Truncate(req.ID.String(), rpc.MaxEcho))))
			}
			attrs = append(attrs, slog.Duration("duration", time.Since(start)))
			if opts.Payloads && len(req.Params) > 0 {
				attrs = append(attrs, slog.String("params", quote(opts.Redactor.JSON(req.Params), opts.MaxPayload)))
			}
			if err != nil {
				if e, ok := errors.AsType[*rpc.Error](err); ok {
					attrs = append(attrs, slog.Int64("code", e.Code))
					if e.Name != "" {
						attrs = append(attrs, slog.String("name", e.Name))
					}
				}
				attrs = append(attrs, slog.String("err", opts.Redactor.String(rpc.Truncate(err.Error(), opts.MaxPayload))))
			} else if opts.Payloads && req.Kind != rpc.KindNotification {
				b, merr := json.Marshal(res)
				if merr != nil {
					b = []byte(fmt.Sprintf("(cannot encode the result: %v)", merr))
				}
				attrs = append(attrs, slog.String("result", quote(opts.Redactor.JSON(b), opts.MaxPayload)))
			}
			l.LogAttrs(ctx, level, "rpc: served", attrs...)
			return res, err
		})
	}
}

// quote returns b cut at n bytes, on a UTF-8 boundary, with "…" marking a
// cut.
func quote(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return rpc.Truncate(string(b), n)
}

// Recover returns middleware that turns a panic in the handlers it wraps
// into an answer of code -32603 (rpc.ErrInternal, "internal error: handler
// panicked"), and logs the panic value (redacted) and the goroutine's stack
// at slog.LevelError on l, never on the protocol's stream. The connection
// goes on serving. A panicking notification handler has no answer; its
// error is what the connection logs for it. A nil l discards the record.
//
// The engine recovers a panic that gets past every middleware as well, but
// logs it only to rpc.Options.Logger; Recover puts it where the rest of the
// program's logging goes, with the method and id.
func Recover(l *slog.Logger) rpc.Middleware {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return func(next rpc.Handler) rpc.Handler {
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (res any, err error) {
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				var rd *redact.Redactor
				attrs := []slog.Attr{
					slog.String("method", rpc.Truncate(req.Method, rpc.MaxEcho)),
					slog.String("panic", rd.String(rpc.Truncate(fmt.Sprint(p), 4*rpc.MaxEcho))),
					slog.String("stack", string(debug.Stack())),
				}
				if !req.ID.IsZero() {
					attrs = append(attrs, slog.String("id", rpc.Truncate(req.ID.String(), rpc.MaxEcho)))
				}
				l.LogAttrs(ctx, slog.LevelError, "rpc: handler panicked", attrs...)
				res, err = nil, &rpc.Error{Code: rpc.CodeInternalError, Message: "internal error: handler panicked"}
			}()
			return next.Handle(ctx, req)
		})
	}
}
