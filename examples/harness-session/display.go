package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/internal/lossy"
)

// display shows a session's progress. On a terminal, milestones are
// printed as lines under a status line that a spinner keeps alive and
// every event updates; elsewhere (a pipe, a file, -plain) every event and
// host-service call is a line of its own, with the time since the start.
//
// Events are shown from the connection's event lane, which the Harness's
// next frames wait for, so the display never writes there: what it shows
// is queued (bounded) for a writer goroutine of its own, and dropped, and
// counted, when stdout is not being read. Nothing is written while d.mu
// is held either, so an interrupt's note cannot be held up by stdout.
type display struct {
	mu     sync.Mutex
	tty    bool
	start  time.Time
	status string
	frame  int
	out    *lossy.Writer // stdout, through a bounded queue

	stop    chan struct{}
	spinner sync.WaitGroup
	closed  sync.Once
}

// displayQueue bounds the writes waiting for a slow stdout; displayFlush
// is how long close waits for them.
const (
	displayQueue = 1024
	displayFlush = time.Second
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newDisplay(w io.Writer, tty bool) *display {
	d := &display{tty: tty, start: time.Now(), out: lossy.New(w, "stdout", displayQueue), stop: make(chan struct{})}
	if tty {
		d.spinner.Add(1)
		go d.spin()
	}
	return d
}

func (d *display) spin() {
	defer d.spinner.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			d.mu.Lock()
			d.frame++
			d.redraw()
			d.mu.Unlock()
		case <-d.stop:
			return
		}
	}
}

// emit queues b for the writer, or drops it when stdout is behind (a
// status-line redraw is dropped silently: the next one replaces it); d.mu
// is held, so that writes keep their order.
func (d *display) emit(b []byte, counted bool) { d.out.Emit(b, counted) }

// redraw draws the status line; d.mu is held.
func (d *display) redraw() {
	if d.status == "" {
		return
	}
	d.emit(fmt.Appendf(nil, "\r\x1b[K%s %5.1fs · %s", spinner[d.frame%len(spinner)], time.Since(d.start).Seconds(), d.status), false)
}

// maxShown bounds the runes of a line or status text.
const maxShown = 240

// shown makes text safe to show on one line: what comes from the Harness
// (messages, ids, event types) could otherwise move the cursor, retitle or
// clear the terminal, forge lines, or be a megabyte long. Line breaks and
// tabs become spaces, other control characters are dropped, and the text
// is cut to maxShown runes.
func shown(text string) string {
	var b strings.Builder
	n := 0
	for _, r := range text {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case unicode.IsControl(r) || r == utf8.RuneError:
			continue
		}
		if n == maxShown {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// line prints a permanent line; d.mu is held.
func (d *display) line(kind, text string) {
	text = shown(text)
	if d.tty {
		d.emit(fmt.Appendf(nil, "\r\x1b[K%s\n", text), true)
		d.redraw()
		return
	}
	d.emit(fmt.Appendf(nil, "%8.3fs  %-5s  %s\n", time.Since(d.start).Seconds(), kind, text), true)
}

// print queues text as it is (the summary); the display's status line
// must be closed first.
func (d *display) print(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.emit([]byte(text), true)
}

// note prints a message of the session itself.
func (d *display) note(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.line("note", fmt.Sprintf(format, args...))
}

// hostCall shows a host-service call the Harness made.
func (d *display) hostCall(role, method string, took time.Duration, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	text := fmt.Sprintf("%s/%s answered in %s", role, method, took.Round(time.Microsecond))
	if err != nil {
		text = fmt.Sprintf("%s/%s failed after %s: %v", role, method, took.Round(time.Microsecond), err)
	}
	if d.tty {
		d.status = shown("serving " + role + "/" + method)
		if err == nil {
			d.redraw()
			return
		}
	}
	d.line("host", text)
}

// milestones are the events a terminal keeps a line of.
var milestones = map[agentpmmachine.EventType]bool{
	agentpmmachine.EventTypeRunStarted: true, agentpmmachine.EventTypePhaseStarted: true, agentpmmachine.EventTypeKnowledgeRetrieved: true,
	agentpmmachine.EventTypeKnowledgeFailed: true, agentpmmachine.EventTypeHookRejected: true, agentpmmachine.EventTypeSemanticActionRejected: true,
	agentpmmachine.EventTypePhaseResultReady: true, agentpmmachine.EventTypeRunCompleted: true, agentpmmachine.EventTypeRunFailed: true,
	agentpmmachine.EventTypeRunCancelled: true, agentpmmachine.EventTypeRunLimitReached: true, agentpmmachine.EventTypeRunApprovalRequired: true,
	agentpmmachine.EventTypeServiceFailed: true, agentpmmachine.EventTypeApprovalApproved: true, agentpmmachine.EventTypeApprovalDenied: true,
	agentpmmachine.EventTypeLoopLimitReached: true,
}

// event shows an event of the Harness.
func (d *display) event(ev harness.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case ev.Preflight != nil:
		d.line("event", fmt.Sprintf("preflight %s (%d diagnostics)", ev.Preflight.Status, len(ev.Preflight.Report.Diagnostics)))
		return
	case ev.MCPExport != nil:
		d.line("event", fmt.Sprintf("mcp export %s: %s", ev.MCPExport.Surface, ev.MCPExport.Event.Tag()))
		return
	}
	h := ev.Harness
	text := shown(string(h.EventType) + describe(ev))
	if d.tty && !milestones[h.EventType] {
		d.status = text
		d.redraw()
		return
	}
	if d.tty {
		d.status = text
	}
	d.line("event", text)
}

// describe says what an event carries, in a few words.
func describe(ev harness.Event) string {
	p := &ev.Harness.Payload
	var parts []string
	switch {
	case p.Action != nil:
		parts = append(parts, p.Action.ActionKind, p.Action.Identity, p.Action.Status)
	case p.Phase != nil:
		parts = append(parts, "phase "+p.Phase.PhaseID)
	case p.Lifecycle != nil:
		parts = append(parts, p.Lifecycle.Message)
	case p.Service != nil:
		msg := p.Service.Service + " " + p.Service.Status
		if f := p.Service.Fields; f != nil && f.Message != nil {
			msg += ": " + *f.Message
		}
		parts = append(parts, msg)
	case p.Terminal != nil:
		parts = append(parts, string(p.Terminal.Status))
	case p.Content != nil:
		parts = append(parts, p.Content.Label)
	case p.Unknown != nil:
		parts = append(parts, "(a payload this version does not know)")
	}
	// Content is shown for what it is: redacted or left out by the
	// Harness's content policy, or its size.
	switch v, c := ev.Content(); c {
	case agentpmmachine.ContentPresent:
		parts = append(parts, fmt.Sprintf("[%d bytes of content]", len(v)))
	case agentpmmachine.ContentRedacted, agentpmmachine.ContentSecretRedacted:
		parts = append(parts, "[content "+c.String()+"]")
	}
	s := strings.Join(parts, " ")
	if s == "" {
		return ""
	}
	return " · " + s
}

// close ends the status line. It may be called more than once: the
// program closes the display before printing a summary or an error, and
// again on its way out (finish).
func (d *display) close() {
	d.closed.Do(func() {
		close(d.stop)
		d.spinner.Wait()
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.tty {
			d.emit([]byte("\r\x1b[K"), false)
		}
		d.status = ""
	})
}

// finish closes the display and writes what is queued, giving up after
// timeout when stdout is not being read. It returns the first error
// writing to stdout, once everything was written (an unread stdout is not
// an error: its lines are dropped by design).
func (d *display) finish(timeout time.Duration) error {
	d.close()
	return d.out.Close(timeout)
}
