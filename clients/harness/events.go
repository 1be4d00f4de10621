package harness

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
)

// Event is one event of the Harness; exactly one member is set. Events
// the client handles are its own: they may be kept.
type Event struct {
	// Harness is a harness_event: every engine and session event.
	Harness *agentpmmachine.HarnessEvent
	// MCPExport is an mcp_export_event: a line of an MCP export surface.
	MCPExport *agentpmmachine.MCPExportEvent
	// Preflight is the startup preflight event.
	Preflight *agentpmmachine.PreflightEvent
}

// Content returns the content a harness_event carries (a content
// payload's content, a phase's output, a terminal output) and what the
// content policy left of it. The value is returned only when it is
// present: a "[redacted]" marker is reported as ContentRedacted, never as
// content.
func (e Event) Content() (jsontext.Value, agentpmmachine.Content) {
	if e.Harness == nil {
		return nil, agentpmmachine.ContentAbsent
	}
	p := &e.Harness.Payload
	var v jsontext.Value
	switch {
	case p.Content != nil:
		v = p.Content.Content
	case p.Phase != nil:
		v = p.Phase.Output
	case p.Terminal != nil:
		v = p.Terminal.Output
	}
	return present(v)
}

// present classifies a content member and returns its value only when it
// is present.
func present(v jsontext.Value) (jsontext.Value, agentpmmachine.Content) {
	c := agentpmmachine.ContentOf(v)
	if c != agentpmmachine.ContentPresent {
		return nil, c
	}
	return v, c
}

// Result is how a Run ended: start_run's answer.
type Result struct {
	Status agentpmmachine.TerminalStatus
	// Output is the Run's output when the Harness sent it, which it does
	// under trace.content full; nil otherwise: OutputContent says whether
	// it was redacted ("[redacted]") or left out, so a redaction marker is
	// never taken for output.
	Output jsontext.Value
	// OutputContent is what the content policy left of the output.
	OutputContent agentpmmachine.Content
	// Report is the Run report (also in <state_dir>/runs/<run_id>/report.json).
	Report agentpmmachine.RunReport
	// Raw is start_run's answer as it arrived.
	Raw *agentpmmachine.StartRunResult
}

func newResult(r *agentpmmachine.StartRunResult) *Result {
	out, c := present(r.Output)
	return &Result{Status: r.Status, Output: out, OutputContent: c, Report: r.Report, Raw: r}
}
