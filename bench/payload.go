// Package bench measures bridgekit's JSON-RPC runtime against the Go
// JSON-RPC stacks people would otherwise pick (github.com/coder/acp-go-sdk,
// golang.org/x/exp/jsonrpc2 and github.com/sourcegraph/jsonrpc2), driving all
// of them through one adapter interface with the same payload and the same
// handler logic. It is a separate module so that the competitors never
// become dependencies of bridgekit itself.
//
// The scenarios follow docs/performance.md (and the performance anchors it
// cites): codec micro-benchmarks, round trips in memory and to a child
// process over real stdio, a notification burst, large messages,
// cancellation, and idle memory per connection. They are exposed as plain
// functions, used both by the testing.B benchmarks of this package and by
// the report driver in cmd/benchreport.
package bench

import (
	"strings"
)

// Method names of the benchmark service.
const (
	MethodPrompt  = "session/prompt" // request: PromptParams -> PromptResult
	MethodUpdate  = "session/update" // notification: PromptParams
	MethodBarrier = "bench/barrier"  // request: BarrierParams -> BarrierResult
	MethodBlock   = "bench/block"    // request: blocks until cancelled or Service.Hold elapses
)

// TextBlock is a prompt content block.
type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Meta is the _meta object of a request.
type Meta struct {
	Traceparent string `json:"traceparent"`
}

// PromptParams is the session/prompt-like request payload. Encoded as a
// request with a small integer id it is about 425 bytes on the wire.
type PromptParams struct {
	SessionID string      `json:"sessionId"`
	Prompt    []TextBlock `json:"prompt"`
	Meta      *Meta       `json:"_meta,omitzero"`
}

// PromptResult is the result of session/prompt.
type PromptResult struct {
	StopReason string `json:"stopReason"`
	Echoed     int    `json:"echoed"`
}

// BarrierParams asks the peer to wait until it has handled Want
// notifications (or a bounded time has passed).
type BarrierParams struct {
	Want int64 `json:"want"`
}

// BarrierResult reports how many notifications the peer had handled.
type BarrierResult struct {
	Seen int64 `json:"seen"`
}

// prose160 is the 160-byte text of the first content block.
const prose160 = "Summarise the failing test in pkg/runtime and propose a minimal fix. " +
	"Keep the public API unchanged, explain the root cause, and list the files you touch. Thanks"

// Traceparent is the W3C trace context carried in _meta.
const Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// SessionID is the session id of every benchmark request.
const SessionID = "sess_01J9Z8Q4M7X2K5V3T6W1R0N8BC"

// NewPrompt returns the standard ~425-byte payload.
func NewPrompt() *PromptParams {
	return &PromptParams{
		SessionID: SessionID,
		Prompt: []TextBlock{
			{Type: "text", Text: prose160[:160]},
			{Type: "text", Text: "Be brief, please."},
		},
		Meta: &Meta{Traceparent: Traceparent},
	}
}

// NewLargePrompt returns the standard payload whose first text block is
// size bytes of prose with a newline (escaped as \n on the wire) every 80
// bytes or so, as in source code or chat transcripts.
func NewLargePrompt(size int) *PromptParams {
	p := NewPrompt()
	var sb strings.Builder
	sb.Grow(size)
	for sb.Len() < size {
		line := prose160[:79]
		if rest := size - sb.Len(); rest <= len(line) {
			sb.WriteString(prose160[:rest])
			break
		}
		sb.WriteString(line)
		sb.WriteByte('\n')
	}
	p.Prompt[0].Text = sb.String()
	return p
}

// promptSize is what session/prompt echoes: the number of text bytes.
func promptSize(p *PromptParams) int {
	n := 0
	for _, b := range p.Prompt {
		n += len(b.Text)
	}
	return n
}
