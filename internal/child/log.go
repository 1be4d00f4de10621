package child

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bridgekit/bridgekit/runtime/redact"
)

// Logger returns a logger that writes l's records with secrets masked by
// r in the message and in every string, error and Stringer attribute:
// give it to the connection to a child, whose diagnostics quote the
// child's frames. A nil l gives nil (the connection's own default then
// applies).
func Logger(l *slog.Logger, r *redact.Redactor) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(&maskHandler{h: l.Handler(), r: r})
}

type maskHandler struct {
	h slog.Handler
	r *redact.Redactor
}

func (m *maskHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return m.h.Enabled(ctx, level)
}

func (m *maskHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, m.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(m.attr(a))
		return true
	})
	return m.h.Handle(ctx, out)
}

func (m *maskHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = m.attr(a)
	}
	return &maskHandler{h: m.h.WithAttrs(masked), r: m.r}
}

func (m *maskHandler) WithGroup(name string) slog.Handler {
	return &maskHandler{h: m.h.WithGroup(name), r: m.r}
}

func (m *maskHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, m.r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		masked := make([]any, len(g))
		for i, ga := range g {
			masked[i] = m.attr(ga)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, m.r.String(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, m.r.String(x.String()))
		case []byte:
			return slog.String(a.Key, m.r.String(string(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// MaskError returns err with its text masked by r: an error whose Error()
// holds nothing to mask is returned as is; otherwise an error whose text is
// masked and that unwraps to err, so errors.Is and errors.As still see
// every error in its chain (whose own fields still hold what they held:
// quote the returned error, not theirs).
func MaskError(r *redact.Redactor, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if m := r.String(msg); m != msg {
		return &maskedError{msg: m, err: err}
	}
	return err
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
