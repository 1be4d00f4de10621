package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
)

func harnessEvent(typ agentpmmachine.EventType, p agentpmmachine.EventPayload) harness.Event {
	return harness.Event{Harness: &agentpmmachine.HarnessEvent{EventType: typ, Payload: p}}
}

// On a terminal: milestones become lines, the rest only updates the
// status line, and closing clears it.
func TestDisplayTerminal(t *testing.T) {
	var out lockedWriter
	out.b = &bytes.Buffer{}
	d := newDisplay(&out, true)
	d.event(harnessEvent(agentpmmachine.EventTypeRunStarted, agentpmmachine.EventPayload{Lifecycle: &agentpmmachine.EventPayloadLifecycle{Message: "Run started"}}))
	d.event(harnessEvent(agentpmmachine.EventTypeModelRequestStarted, agentpmmachine.EventPayload{Action: &agentpmmachine.EventPayloadAction{ActionKind: "model", Identity: "m", Status: "started"}}))
	d.hostCall("model", "generate", 3*time.Millisecond, nil)
	d.hostCall("knowledge", "retrieve", time.Millisecond, errors.New("index gone"))
	time.Sleep(250 * time.Millisecond) // the spinner redraws
	d.event(harnessEvent(agentpmmachine.EventTypeRunCompleted, agentpmmachine.EventPayload{Terminal: &agentpmmachine.EventPayloadTerminal{Status: agentpmmachine.TerminalStatusEnded, Output: []byte(`"[redacted]"`)}}))
	d.close()
	d.close() // as run does: before the summary, and deferred
	d.finish(time.Second)
	s := out.String()
	lines := strings.Split(s, "\n")
	var kept []string
	for _, l := range lines[:len(lines)-1] {
		kept = append(kept, l[strings.LastIndex(l, "\x1b[K")+3:])
	}
	want := []string{"run_started · Run started", "knowledge/retrieve failed after 1ms: index gone", "run_completed · ended [content redacted]"}
	if strings.Join(kept, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %q, want %q", kept, want)
	}
	for _, w := range []string{"model_request_started · model m started", "serving model/generate", "⠙"} {
		if !strings.Contains(s, w) {
			t.Errorf("no %q in the status line: %q", w, s)
		}
	}
	if !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("status line not cleared: %q", s[len(s)-20:])
	}
}

// Piped: a line per event and call, content described, never shown.
func TestDisplayPlain(t *testing.T) {
	var out bytes.Buffer
	d := newDisplay(&out, false)
	d.event(harnessEvent(agentpmmachine.EventTypePromptPrepared, agentpmmachine.EventPayload{Content: &agentpmmachine.EventPayloadContent{Label: "prompt", Content: []byte(`"the secret plan"`)}}))
	d.event(harnessEvent(agentpmmachine.EventTypeServiceFailed, agentpmmachine.EventPayload{Service: &agentpmmachine.EventPayloadService{Service: "model", Status: "failed"}}))
	d.event(harness.Event{Preflight: &agentpmmachine.PreflightEvent{Status: agentpmmachine.PreflightStatusReadyWithWarnings}})
	d.finish(time.Second)
	s := out.String()
	for _, w := range []string{"event  prompt_prepared · prompt [17 bytes of content]", "event  service_failed · model failed", "event  preflight ready_with_warnings (0 diagnostics)"} {
		if !strings.Contains(s, w) {
			t.Errorf("no %q in %q", w, s)
		}
	}
	if strings.Contains(s, "secret plan") || strings.Contains(s, "\x1b") {
		t.Errorf("output %q", s)
	}
}

// stuckWriter blocks every write until released.
type stuckWriter struct{ release chan struct{} }

func (w stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return len(p), nil
}

// A stdout nobody reads never blocks the display (whose event method runs
// on the connection's event lane): lines are dropped, and finish gives up
// after its timeout.
func TestDisplayNeverBlocks(t *testing.T) {
	for _, tty := range []bool{false, true} {
		w := stuckWriter{release: make(chan struct{})}
		d := newDisplay(w, tty)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 5 * displayQueue {
				d.event(harnessEvent(agentpmmachine.EventTypeRunStarted, agentpmmachine.EventPayload{Lifecycle: &agentpmmachine.EventPayloadLifecycle{Message: fmt.Sprint(i)}}))
				d.hostCall("model", "generate", time.Millisecond, nil)
				d.note("note %d", i)
			}
			d.print("summary\n")
			d.close()
			d.finish(100 * time.Millisecond)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			close(w.release)
			<-done
			t.Fatalf("tty %v: the display blocked on its writer", tty)
		}
		close(w.release)
	}
}

// Lines dropped while stdout was not read are counted once it is.
func TestDisplayCountsDroppedLines(t *testing.T) {
	var out lockedWriter
	out.b = &bytes.Buffer{}
	w := &gatedWriter{gate: make(chan struct{}), w: &out}
	d := newDisplay(w, false)
	for i := range displayQueue + 10 {
		d.note("n%d", i)
	}
	close(w.gate)
	d.finish(5 * time.Second)
	if s := out.String(); !strings.Contains(s, "lines not shown: stdout is not being read") || !strings.Contains(s, "n0\n") {
		t.Fatalf("output %q", s[max(0, len(s)-300):])
	}
}

// gatedWriter holds writes until gate is closed.
type gatedWriter struct {
	gate chan struct{}
	w    io.Writer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	return g.w.Write(p)
}

// What the Harness sends is shown on one line of a bounded length, with no
// control character: an event's message cannot move the cursor, retitle
// the terminal, clear it or forge a line, and a 1 MiB message does not
// become a 1 MiB line; nor can a refused registration's message.
func TestDisplayCleansWhatTheHarnessSends(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var out lockedWriter
		out.b = &bytes.Buffer{}
		d := newDisplay(&out, tty)
		hostile := "Run started\x1b]0;pwned\x07\x1b[2J\r\n  99.999s  event  run_completed · forged\x7f"
		d.event(harnessEvent(agentpmmachine.EventTypeRunStarted, agentpmmachine.EventPayload{Lifecycle: &agentpmmachine.EventPayloadLifecycle{Message: hostile}}))
		d.event(harnessEvent(agentpmmachine.EventTypeModelRequestStarted, agentpmmachine.EventPayload{Lifecycle: &agentpmmachine.EventPayloadLifecycle{Message: hostile}}))
		d.event(harnessEvent(agentpmmachine.EventTypeRunStarted, agentpmmachine.EventPayload{Lifecycle: &agentpmmachine.EventPayloadLifecycle{Message: strings.Repeat("a", 1<<20)}}))
		d.event(harnessEvent(agentpmmachine.EventType("x\x1b[2J"), agentpmmachine.EventPayload{}))
		d.hostCall("model\x1b[2J", "generate\n", time.Millisecond, errors.New("bad\x1b[2J"))
		d.note("model/default not registered: %v", errors.New("host service `model\x1b[2J`"))
		d.close()
		d.finish(time.Second)
		s := out.String()
		if tty {
			// The display's own sequences: clear the line, return.
			s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\x1b[K", ""), "\r", "")
		}
		for _, line := range strings.Split(s, "\n") {
			if strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(line) > 1024 {
				t.Errorf("tty %v: line %q", tty, line[:min(len(line), 200)])
			}
			// The forged time is one the test never reaches, so that a real
			// line (which starts with the time since the start) is never
			// taken for it.
			if strings.HasPrefix(line, "  99.999s") {
				t.Errorf("tty %v: forged line %q", tty, line)
			}
		}
	}
}
