package scriptedmodel

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
)

// data writes one server-sent event of data only (chat completions and
// the Gemini API name no events), v as JSON, or the text raw when v is a
// string, and flushes it.
func (e *sse) data(v any) {
	var data []byte
	if s, ok := v.(string); ok {
		data = []byte(s)
	} else {
		data, _ = json.Marshal(v, json.Deterministic(true))
	}
	e.buf.Reset()
	fmt.Fprintf(&e.buf, "data: %s\n\n", data)
	_, _ = e.w.Write(e.buf.Bytes())
	e.flush()
}

// chatUsage is the usage member of chat completions.
func chatUsage(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedInput},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
	}
}

// chat answers OpenAI chat completions: streamed as chunks of deltas
// (reasoning_content, content, tool_calls), the last with the finish
// reason and the usage, then [DONE]; or as one completion.
func (t *turn) chat(stream bool) {
	s, reply := t.s, t.reply
	id := s.id("chatcmpl")
	finish := "stop"
	if len(t.calls) > 0 {
		finish = "tool_calls"
	}
	var toolCalls []any
	for i, c := range t.calls {
		callID := c.id
		if callID == "" {
			callID = s.id("call")
		}
		in, _ := c.text()
		toolCalls = append(toolCalls, map[string]any{"index": i, "id": callID, "type": "function", "function": map[string]any{"name": c.name, "arguments": in}})
	}
	created := time.Now().Unix()
	if !stream {
		t.pause()
		msg := map[string]any{"role": "assistant", "content": reply.Text}
		if reply.Thinking != "" {
			msg["reasoning_content"] = reply.Thinking
		}
		if len(toolCalls) > 0 {
			msg["tool_calls"] = toolCalls
		}
		writeJSON(t.w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": t.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": chatUsage(reply.Usage)})
		return
	}
	e := newSSE(t.w)
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": t.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		e.data(c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	t.pause()
	for _, d := range chunks(reply.Thinking) {
		chunk(map[string]any{"reasoning_content": d}, nil, nil)
	}
	for _, d := range chunks(reply.Text) {
		chunk(map[string]any{"content": d}, nil, nil)
	}
	for _, tc := range toolCalls {
		chunk(map[string]any{"tool_calls": []any{tc}}, nil, nil)
	}
	chunk(map[string]any{}, finish, chatUsage(reply.Usage))
	e.data("[DONE]")
}
