package main

import (
	"bytes"
	"errors"
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
	d.close()
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
