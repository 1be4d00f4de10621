package scriptedmodel

import "github.com/go-json-experiment/json"

// gemini answers the Gemini API's generateContent, streamed
// (streamGenerateContent, as server-sent events, one response per event)
// or not: thought parts, text parts, functionCall parts, and
// usageMetadata with the last.
func (t *turn) gemini(stream bool) {
	reply := t.reply
	var parts []map[string]any
	if reply.Thinking != "" {
		// One thought part, as Gemini writes them: a bold subject, then
		// the text.
		parts = append(parts, map[string]any{"text": "**Thinking**\n\n" + reply.Thinking, "thought": true})
	}
	for _, d := range chunks(reply.Text) {
		parts = append(parts, map[string]any{"text": d})
	}
	for _, c := range t.calls {
		in, _ := c.text()
		var args any
		_ = json.Unmarshal([]byte(in), &args)
		call := map[string]any{"name": c.name, "args": args}
		if c.id != "" {
			call["id"] = c.id
		}
		parts = append(parts, map[string]any{"functionCall": call})
	}
	u := reply.Usage
	usage := map[string]any{"promptTokenCount": u.Input, "candidatesTokenCount": u.Output, "totalTokenCount": u.Input + u.Output,
		"thoughtsTokenCount": u.Reasoning, "cachedContentTokenCount": u.CachedInput}
	response := func(parts []map[string]any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		r := map[string]any{"candidates": []any{cand}, "modelVersion": t.model, "responseId": t.s.id("gen")}
		if last {
			cand["finishReason"] = "STOP"
			r["usageMetadata"] = usage
		}
		return r
	}
	if !stream {
		t.pause()
		if len(parts) == 0 {
			parts = []map[string]any{{"text": ""}}
		}
		writeJSON(t.w, response(parts, true))
		return
	}
	e := newSSE(t.w)
	if len(parts) == 0 {
		parts = []map[string]any{{"text": ""}}
	}
	for i, p := range parts {
		e.data(response([]map[string]any{p}, i == len(parts)-1))
		if i == 0 {
			t.pause()
		}
	}
}
