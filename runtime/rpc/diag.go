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

// diagnostics hands reports of bad frames and the connection's log records, through bounded queues that are
// never waited on, to a goroutine of its own, which calls Options.OnFrameError and the logger and logs bad
// frames at a limited rate. A peer flooding garbage while nobody drains stderr therefore never stalls reading
// or the handlers: what finds its queue full is counted, and the count logged (as "suppressed") with the next
// bad frame logged.
type diagnostics struct {
	log  *slog.Logger
	lost *slog.Logger // logs FrameBadParams reports, to slog's default logger when log discards
	on   func(*FrameError)
	ch   chan *FrameError
	recs chan diagRecord
	quit chan struct{}
	once sync.Once
	stop func()

	dropped    atomic.Int64              // reports and records that found their queue full, not yet logged
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
	diagQueue  = 64               // reports, and records, queued at most
	diagBurst  = 10               // bad frames logged at once,
	diagEvery  = time.Second / 10 // then one per period
	diagBytes  = 4 << 20          // bytes of whole lines (FrameError.Frame) queued at most
	maxErrText = 4 * MaxEcho      // bounds the text of a reported FrameError's Err
)

// init sets the logger (nil: discard diagnostics, but log FrameBadParams reports through slog's default
// logger) and the frame error callback.
func (d *diagnostics) init(log *slog.Logger, on func(*FrameError)) {
	d.log, d.lost, d.on = log, log, on
	if log == nil {
		d.log, d.lost = slog.New(slog.DiscardHandler), slog.Default()
	}
	d.quit = make(chan struct{})
	d.stop = sync.OnceFunc(func() { close(d.quit) })
}

// logger returns the connection's logger, whose records the diagnostics goroutine handles.
func (d *diagnostics) logger() *slog.Logger {
	return slog.New(&diagHandler{d.log.Handler(), d})
}

// diagHandler queues the records of the Handler it embeds.
type diagHandler struct {
	slog.Handler
	d *diagnostics
}

func (h *diagHandler) Handle(_ context.Context, r slog.Record) error {
	h.d.start()
	select {
	case h.d.recs <- diagRecord{h.Handler, r.Clone()}:
	default:
		h.d.dropped.Add(1)
	}
	return nil
}

func (h *diagHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &diagHandler{h.Handler.WithAttrs(as), h.d}
}

func (h *diagHandler) WithGroup(name string) slog.Handler {
	return &diagHandler{h.Handler.WithGroup(name), h.d}
}

// start makes the queues (about 17 KiB) and starts their goroutine on first use: most connections never
// report anything.
func (d *diagnostics) start() {
	d.once.Do(func() {
		d.ch = make(chan *FrameError, diagQueue)
		d.recs = make(chan diagRecord, diagQueue)
		go d.run()
	})
}

// report counts fe and queues it without blocking. line, if not nil, is the whole line, which fe.Frame gets a
// copy of for OnFrameError while the queued reports hold less than diagBytes of lines.
func (d *diagnostics) report(fe *FrameError, line []byte) {
	d.counts[min(int(fe.Kind), len(d.counts)-1)].Add(1)
	if line != nil && d.on != nil { // only OnFrameError sees Frame
		if n := int64(len(line)); d.held.Add(n) <= diagBytes {
			fe.Frame = bytes.Clone(line)
		} else {
			d.held.Add(-n)
		}
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
	// FrameErrors counts the lines reported to Options.OnFrameError (and the logger), by FrameErrorKind:
	// FrameErrors[FrameBadParams] is the number of notifications dropped because their params did not decode.
	FrameErrors [frameKinds]uint64
	// Unreported counts the reports, among those, that OnFrameError and the logger never saw: they came
	// faster than those could take them.
	Unreported uint64
}

// Stats returns the connection's counts so far.
func (c *Conn) Stats() Stats {
	s := Stats{Unreported: c.diag.unreported.Load()} // loaded first, so never above the counts
	for k := range s.FrameErrors {
		s.FrameErrors[k] = c.diag.counts[k].Load()
	}
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
			for len(d.recs) > 0 {
				r := <-d.recs
				r.h.Handle(context.Background(), r.rec)
			}
			return
		}
	}
}

// redactor masks token shapes in what the diagnostics quote of the peer.
var redactor = redact.New()

// bounded returns fe, or a copy of it (fe may be shared, as the error of the call a bad reply answered) whose
// ID is left out if longer than MaxEcho bytes and whose Err's text is cut to maxErrText bytes, still
// unwrapping to the original error.
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
