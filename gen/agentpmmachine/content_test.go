package agentpmmachine_test

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
)

// Redaction markers are surfaced as redacted, never as output.
func TestContentPolicy(t *testing.T) {
	for in, want := range map[string]agentpmmachine.Content{
		``:                      agentpmmachine.ContentAbsent,
		`"[redacted]"`:          agentpmmachine.ContentRedacted,
		`"[secret redacted]"`:   agentpmmachine.ContentSecretRedacted,
		`"redacted"`:            agentpmmachine.ContentPresent,
		`{"text":"[redacted]"}`: agentpmmachine.ContentPresent,
		`null`:                  agentpmmachine.ContentPresent,
	} {
		var v jsontext.Value
		if in != "" {
			v = jsontext.Value(in)
		}
		if got := agentpmmachine.ContentOf(v); got != want {
			t.Errorf("%s: %v, want %v", in, got, want)
		}
	}
	// start_run's output under the three policies.
	for doc, want := range map[string]agentpmmachine.Content{
		`{"status":"ended","output":"[redacted]","report":` + report + `}`:  agentpmmachine.ContentRedacted,
		`{"status":"ended","report":` + report + `}`:                        agentpmmachine.ContentAbsent,
		`{"status":"ended","output":{"answer":42},"report":` + report + `}`: agentpmmachine.ContentPresent,
	} {
		var r agentpmmachine.StartRunResult
		if err := json.Unmarshal([]byte(doc), &r); err != nil || r.OutputContent() != want {
			t.Errorf("%s: %v %v", doc, r.OutputContent(), err)
		}
	}
	if agentpmmachine.ContentRedacted.String() != "redacted" || agentpmmachine.ContentPresent.String() != "present" {
		t.Fatal("names")
	}
}

const report = `{"report_version":1,"session_id":"s","run_id":"r","agent":{"name":"a","version":"1"},"loop_package":{"name":"l","version":"1"},` +
	`"started_at":"2025-06-01T10:00:00Z","terminal_status":"ended","preflight_status":"ready","diagnostics":[],"runtime":{},"runtime_sources":{},` +
	`"scope_summaries":[],"phase_summaries":[],"checkpoint_summaries":[],"action_summaries":[],"tool_summaries":[],"mcp_summaries":[],` +
	`"knowledge_summaries":[],"memory_summaries":[],"usage":{},"retry_count":0,"repair_count":0,"error_count":0,"approval_summary":{},"cancellation_summary":{}}`

func TestTerminalEventType(t *testing.T) {
	for s, want := range map[agentpmmachine.TerminalStatus]agentpmmachine.EventType{
		"ended": "run_completed", "handed_off": "run_completed", "aborted": "run_failed", "failed": "run_failed",
		"cancelled": "run_cancelled", "limit_reached": "run_limit_reached", "approval_required": "run_approval_required", "paused": "",
	} {
		if got := agentpmmachine.TerminalEventType(s); got != want {
			t.Errorf("%s: %s, want %s", s, got, want)
		}
	}
	for _, s := range []agentpmmachine.TerminalStatus{"ended", "handed_off", "aborted", "failed", "cancelled", "limit_reached", "approval_required"} {
		if !s.Known() || !agentpmmachine.TerminalEventType(s).Known() {
			t.Errorf("%s", s)
		}
	}
}

func TestRegistration(t *testing.T) {
	for in, want := range map[string]string{
		`{"role":"knowledge","registry_id":"kb"}`:           "kb",
		`{"role":"hook","id":"policy"}`:                     "policy",
		`{"role":"hook","registry_id":"a","id":"b"}`:        "a",
		`{"role":"approval","capabilities":{"approval":1}}`: "",
	} {
		var p agentpmmachine.RegisterHostServiceParams
		if err := json.Unmarshal([]byte(in), &p); err != nil {
			t.Fatal(err)
		}
		r, ok := p.Registration()
		if r.RegistryID != want || ok != (want != "") || r.Role != p.Role {
			t.Errorf("%s: %+v %v", in, r, ok)
		}
	}
}
