package rpc

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridgekit/bridgekit/runtime/redact"
)

// diagnostics reports bad inbound frames and logs away from the read path
// and the handlers: reports and log records go through bounded channels to
// a goroutine of their own, which calls Options.OnFrameError and the
// logger's handler, logging bad frames at a limited rate. A peer that
// floods garbage while nobody drains stderr therefore never stops the
// connection answering; what cannot be queued is counted and summarised
// later.
type diagnostics struct {
	log  *slog.Logger
	lost *slog.Logger // logs the notifications dropped undecoded (FrameBadParams)
	on   func(*FrameError)
	ch   chan *FrameError
	recs chan diagRecord
	quit chan struct{}
	once sync.Once
	stop func()

	dropped    atomic.Int64              // reports and records that found their channel full
	counts     [frameKinds]atomic.Uint64 // reports, by kind
	unreported atomic.Uint64             // reports that found the queue full
	held       atomic.Int64              // bytes of FrameError.Frame queued
}

// diagRecord is a log record waiting for the diagnostics goroutine.
type diagRecord struct {
	h   slog.Handler
	rec slog.Record
}

const (
	diagQueue = 64               // reports (and records) waiting for the goroutine
	diagBurst = 10               // log lines about bad frames allowed at once
	diagEvery = time.Second / 10 // then one per this period
	diagBytes = 4 << 20          // bytes of whole lines (FrameError.Frame) queued at most
	// maxErrText bounds the text of a reported FrameError's Err.
	maxErrText = 4 * MaxEcho
)

// init sets the logger (nil: discard diagnostics, but log the
// notifications dropped undecoded through slog's default logger) and the
// frame error callback.
func (d *diagnostics) init(log *slog.Logger, on func(*FrameError)) {
	d.log, d.lost, d.on = log, log, on
	if log == nil {
		d.log, d.lost = slog.New(slog.DiscardHandler), slog.Default()
	}
	d.quit = make(chan struct{})
	d.stop = sync.OnceFunc(func() { close(d.quit) })
}

// logger returns the connection's logger: its records are handled by the
// diagnostics goroutine, so that a handler that blocks (a full stderr)
// never stalls the goroutine that logs.
func (d *diagnostics) logger() *slog.Logger {
	return slog.New(&diagHandler{d: d, h: d.log.Handler()})
}

// diagHandler hands records to the diagnostics goroutine.
type diagHandler struct {
	d *diagnostics
	h slog.Handler
}

func (h *diagHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *diagHandler) Handle(_ context.Context, r slog.Record) error {
	h.d.start()
	select {
	case h.d.recs <- diagRecord{h.h, r.Clone()}:
	default:
		h.d.dropped.Add(1)
	}
	return nil
}

func (h *diagHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &diagHandler{d: h.d, h: h.h.WithAttrs(as)}
}

func (h *diagHandler) WithGroup(name string) slog.Handler {
	return &diagHandler{d: h.d, h: h.h.WithGroup(name)}
}

// start makes the queues and starts the goroutine on first use: most
// connections never report anything, and the queues are about 17 KiB.
func (d *diagnostics) start() {
	d.once.Do(func() {
		d.ch = make(chan *FrameError, diagQueue)
		d.recs = make(chan diagRecord, diagQueue)
		go d.run()
	})
}

// report counts fe and queues it without ever blocking. line, if not
// nil, is the whole line, which fe.Frame gets a copy of while the reports
// queued hold less than diagBytes of lines.
func (d *diagnostics) report(fe *FrameError, line []byte) {
	d.counts[min(int(fe.Kind), len(d.counts)-1)].Add(1)
	if line != nil && d.on == nil {
		line = nil // nobody would see it
	}
	if line != nil && d.held.Add(int64(len(line))) <= diagBytes {
		fe.Frame = bytes.Clone(line)
	} else if line != nil {
		d.held.Add(-int64(len(line)))
	}
	d.start()
	select {
	case d.ch <- fe:
	default:
		d.held.Add(-int64(len(fe.Frame)))
		d.unreported.Add(1)
		d.dropped.Add(1)
	}
}

// Stats counts the inbound lines a connection did not take as they came.
type Stats struct {
	// FrameErrors counts the lines reported to Options.OnFrameError (and
	// the logger), by FrameErrorKind: FrameErrors[FrameBadParams] is the
	// number of notifications dropped because their params did not decode.
	FrameErrors [frameKinds]uint64
	// Unreported counts the reports, among those, that OnFrameError and
	// the logger never saw: they came faster than those could take them.
	Unreported uint64
}

// Stats returns the connection's counts so far.
func (c *Conn) Stats() Stats {
	var s Stats
	for k := range s.FrameErrors {
		s.FrameErrors[k] = c.diag.counts[k].Load()
	}
	s.Unreported = c.diag.unreported.Load()
	return s
}

func (d *diagnostics) run() {
	tokens, last := float64(diagBurst), time.Now()
	suppressed := 0
	for {
		select {
		case r := <-d.recs:
			r.h.Handle(context.Background(), r.rec)
		case fe := <-d.ch:
			held := len(fe.Frame)
			fe = bounded(fe)
			if d.on != nil {
				d.on(fe)
			}
			d.held.Add(-int64(held))
			now := time.Now()
			tokens = min(diagBurst, tokens+float64(now.Sub(last))/float64(diagEvery))
			last = now
			if tokens < 1 {
				suppressed++
				continue
			}
			tokens--
			suppressed += int(d.dropped.Swap(0))
			// The line is the peer's: it may quote a secret.
			args := []any{"kind", fe.Kind.String(), "err", redactor.String(errText(fe.Err)), "line", redactor.String(fe.Snippet)}
			if !fe.ID.IsZero() {
				args = append(args, "id", redactor.String(fe.ID.String()))
			}
			if suppressed > 0 {
				args = append(args, "suppressed", suppressed)
				suppressed = 0
			}
			if fe.Kind == FrameBadParams {
				d.lost.Warn("rpc: notification dropped: its params do not decode", append(args, "method", redactor.String(Truncate(fe.Method, MaxEcho)))...)
			} else {
				d.log.Warn("rpc: bad inbound frame", args...)
			}
		case <-d.quit:
			// Log what was queued before the end, such as a write error.
			for {
				select {
				case r := <-d.recs:
					r.h.Handle(context.Background(), r.rec)
				default:
					return
				}
			}
		}
	}
}

// redactor masks token shapes in what the diagnostics quote of the peer.
var redactor = redact.New()

// bounded returns fe, or a copy of it whose fields repeat little of the
// peer's input: an ID longer than MaxEcho bytes is left out and Err's text
// is cut to maxErrText bytes (Err still unwraps to the original error).
// fe itself may be shared, as the error of the call a bad reply answered.
func bounded(fe *FrameError) *FrameError {
	long := len(fe.ID.raw) > MaxEcho
	text := errText(fe.Err)
	if !long && len(text) <= maxErrText {
		return fe
	}
	c := *fe
	if long {
		c.ID = ID{}
	}
	if len(text) > maxErrText {
		c.Err = &truncatedError{msg: Truncate(text, maxErrText), err: fe.Err}
	}
	return &c
}

// truncatedError is an error with a shortened text.
type truncatedError struct {
	msg string
	err error
}

func (e *truncatedError) Error() string { return e.msg }
func (e *truncatedError) Unwrap() error { return e.err }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
