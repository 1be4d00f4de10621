package main

import (
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// FuzzRenderUpdate renders any session/update an agent could send: it never
// panics, and nothing but line breaks, tabs and the renderer's own colour
// sequences reaches the terminal.
func FuzzRenderUpdate(f *testing.F) {
	if data, err := os.ReadFile(tourFile); err == nil {
		var tour struct {
			Updates          []jsontext.Value `json:"updates"`
			ExtensionUpdates []jsontext.Value `json:"extensionUpdates"`
		}
		if json.Unmarshal(data, &tour) == nil {
			for _, u := range append(tour.Updates, tour.ExtensionUpdates...) {
				f.Add([]byte(u))
			}
		}
	}
	for _, s := range []string{
		`{"sessionUpdate":"worker_update","_meta":{"harn":{"workerName":"w\u001b[2J","status":1}}}`,
		`{"sessionUpdate":"reminder_emitted","_meta":{"harn":{"reminder":{"body":"b","tags":["t"]}}}}`,
		`{"sessionUpdate":"user_message","messageId":"m","content":[{"type":"text","text":"x"}]}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"video","x":"\u0000"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t","content":[{"type":"x"}],"_meta":{"harn":{"executor":{"kind":"other"}}}}`,
		`{"sessionUpdate":"progress","_meta":null}`,
		`{"sessionUpdate":"user_message_chunk","content":{"type":"audio","data":"","mimeType":"\u007f"}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"","mimeType":"\u009b2J"}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"resource","resource":{"uri":"u","blob":"","mimeType":"\u001b[2J"}}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","kind":"\u001b[2J","status":"\u007f"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t","kind":"\u001b]0;x\u0007","status":"\u0085"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var u acp.SessionUpdate
		if json.Unmarshal(doc, &u) != nil {
			return
		}
		for _, color := range []bool{false, true} {
			out := &syncBuffer{}
			r := newRenderer(out, color)
			r.Update(&acp.SessionNotification{SessionID: "s", Update: u})
			r.close(5 * time.Second)
			text := out.String()
			if color {
				text = ansi(text)
			}
			if !strings.HasSuffix(text, "\n") {
				t.Fatalf("%s rendered as %q: no line end", doc, text)
			}
			for _, c := range text {
				if unicode.IsControl(c) && c != '\n' && c != '\t' {
					t.Fatalf("%s rendered control character %U: %q", doc, c, text)
				}
			}
		}
	})
}
