package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
)

// display shows a session's progress. On a terminal, milestones are
// printed as lines under a status line that a spinner keeps alive and
// every event updates; elsewhere (a pipe, a file, -plain) every event and
// host-service call is a line of its own, with the time since the start.
type display struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	start  time.Time
	status string
	frame  int
	stop   chan struct{}
	done   sync.WaitGroup
	closed sync.Once
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newDisplay(w io.Writer, tty bool) *display {
	d := &display{w: w, tty: tty, start: time.Now(), stop: make(chan struct{})}
	if tty {
		d.done.Add(1)
		go d.spin()
	}
	return d
}

func (d *display) spin() {
	defer d.done.Done()
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

// redraw draws the status line; d.mu is held.
func (d *display) redraw() {
	if d.status == "" {
		return
	}
	fmt.Fprintf(d.w, "\r\x1b[K%s %5.1fs · %s", spinner[d.frame%len(spinner)], time.Since(d.start).Seconds(), d.status)
}

// line prints a permanent line; d.mu is held.
func (d *display) line(kind, text string) {
	if d.tty {
		fmt.Fprintf(d.w, "\r\x1b[K%s\n", text)
		d.redraw()
		return
	}
	fmt.Fprintf(d.w, "%8.3fs  %-5s  %s\n", time.Since(d.start).Seconds(), kind, text)
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
		d.status = "serving " + role + "/" + method
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
	text := string(h.EventType) + describe(ev)
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
// again on its way out.
func (d *display) close() {
	if !d.tty {
		return
	}
	d.closed.Do(func() {
		close(d.stop)
		d.done.Wait()
		d.mu.Lock()
		fmt.Fprint(d.w, "\r\x1b[K")
		d.status = ""
		d.mu.Unlock()
	})
}
