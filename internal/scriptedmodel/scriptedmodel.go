// Package scriptedmodel is a model endpoint for tests: an HTTP server that
// answers the model calls of real coding agents from a script instead of a
// model, so that whole agent turns (thinking, plans, tool calls, tool
// results, usage) run on 127.0.0.1 with no credentials and no network.
//
// It speaks the two streaming APIs the ACP agents from npm call:
//   - the OpenAI Responses API, POST {base}/responses with "stream": true,
//     answered with its server-sent events (codex, codex-acp);
//   - the Anthropic Messages API, POST {base}/v1/messages, streamed or not,
//     and POST {base}/v1/messages/count_tokens (Claude Code, and so
//     claude-agent-acp and claude-code-acp).
//
// A Script is the list of replies the model gives to the agent's main
// requests, in order. A request is main when it offers tools (an agent's
// turn always does); other requests (Claude Code asks a small model for a
// title, or probes the quota) get a short text reply and do not consume the
// script. A reply can stream thinking, text and tool calls, and reports
// usage. A tool call must name a tool the request offers: otherwise the
// request is answered with HTTP 400 and the mismatch is kept in Errors, so
// that a test fails with the tools the agent did offer. Every request is
// kept (Requests) for the test to inspect, including those to paths the
// server does not serve, which are answered 404 and are also an error.
//
// The server binds only loopback addresses: Listen refuses any other.
package scriptedmodel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Script is the list of replies to an agent's main requests, in order.
type Script []Reply

// Reply is one model response.
type Reply struct {
	// Thinking is streamed first, as reasoning (a reasoning summary on the
	// Responses API, a thinking block on the Messages API), when not empty.
	Thinking string
	// Text is streamed next, as the assistant's message, when not empty.
	Text string
	// Calls are the tool calls the reply ends with; a reply without calls
	// ends the agent's turn.
	Calls []Call
	// Usage is reported for the reply; zero values are reported as small
	// counts derived from the request and reply sizes.
	Usage Usage
}

// Call is one tool call.
type Call struct {
	// Name is the tool's name as the request offers it ("Read",
	// "mcp__acp__Write", "exec_command", "update_plan", ...).
	Name string
	// Input is the call's arguments: a JSON object for a function tool, or
	// a JSON string for a freeform (custom) tool such as codex's
	// apply_patch, whose raw text is the string's value.
	Input jsontext.Value
	// ID is the call's id; empty means one is made up ("call_N"/"toolu_N").
	ID string
}

// Usage is the token accounting reported with a reply.
type Usage struct {
	Input, Output, CachedInput, Reasoning int
}

// Request is one HTTP request the server received.
type Request struct {
	Time   time.Time
	Method string
	Path   string
	// API is "responses", "messages", "count_tokens" or "" (not served).
	API string
	// Main reports whether the request consumed a reply of the script.
	Main bool
	// Reply is the index in the script of the reply it got, or -1.
	Reply int
	// Model is the request's "model" member.
	Model string
	// Tools are the names of the tools the request offered.
	Tools []string
	// Body is the request body (up to MaxBody bytes).
	Body []byte
	// Header is the request's header.
	Header http.Header
}

// MaxBody bounds the bytes of a request body the server reads and keeps.
const MaxBody = 8 << 20

// Server is a scripted model endpoint. Create it with New and Serve it on a
// listener from Listen, or with Start.
type Server struct {
	mu       sync.Mutex
	script   Script
	next     int
	requests []Request
	errs     []error
	ids      int
	srv      *http.Server
	ln       net.Listener
	done     chan struct{}
}

// New returns a server that answers from script.
func New(script Script) *Server {
	return &Server{script: script}
}

// Listen listens on addr, which must be a loopback address
// ("127.0.0.1:0" for any free port).
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("scriptedmodel: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("scriptedmodel: %q is not a loopback address", addr)
	}
	return net.Listen("tcp", addr)
}

// Start listens on 127.0.0.1 (a free port) and serves.
func Start(script Script) (*Server, error) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := New(script)
	s.Serve(ln)
	return s, nil
}

// Serve serves on ln in the background until Close. It must be called once.
func (s *Server) Serve(ln net.Listener) {
	s.ln = ln
	s.done = make(chan struct{})
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
}

// URL returns the server's base URL, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and closes every connection.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	<-s.done
	return err
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Used returns how many replies of the script were given.
func (s *Server) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Err returns the errors seen so far (unserved paths, tool calls naming a
// tool the request did not offer, bad request bodies, requests past the end
// of the script), joined, or nil.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// request is the part of a Responses or Messages request the server reads.
type request struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err == nil && len(body) > MaxBody {
		err = fmt.Errorf("body over %d bytes", MaxBody)
	}
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Reply: -1, Body: body, Header: r.Header.Clone()}
	var api string
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		api = "count_tokens"
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		api = "messages"
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		api = "responses"
	}
	rec.API = api
	var req request
	if err == nil && api != "" {
		if err = json.Unmarshal(body, &req, json.RejectUnknownMembers(false)); err != nil {
			err = fmt.Errorf("decoding the body: %w", err)
		}
	}
	rec.Model = req.Model
	for _, t := range req.Tools {
		name := t.Name
		if name == "" && t.Function != nil {
			name = t.Function.Name
		}
		if name == "" {
			name = t.Type // a built-in tool such as web_search
		}
		rec.Tools = append(rec.Tools, name)
	}
	var reply Reply
	s.mu.Lock()
	if err == nil && api != "" && api != "count_tokens" && len(rec.Tools) > 0 {
		rec.Main = true
		if s.next < len(s.script) {
			rec.Reply = s.next
			reply = s.script[s.next]
			s.next++
		} else {
			err = fmt.Errorf("request %d past the end of the %d-reply script", s.next+1, len(s.script))
			s.next++
		}
	} else if api != "" {
		reply = Reply{Text: "Scripted."}
	}
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	where := r.Method + " " + r.URL.Path
	if err == nil && api == "" {
		err = errors.New("not a model API this server serves")
	}
	if err == nil {
		for _, c := range reply.Calls {
			if !slices.Contains(rec.Tools, c.Name) {
				err = fmt.Errorf("reply %d calls %q, which the request does not offer (it offers %s)", rec.Reply+1, c.Name, strings.Join(rec.Tools, ", "))
				break
			}
		}
	}
	if err != nil {
		s.fail(fmt.Errorf("scriptedmodel: %s: %w", where, err))
		status := http.StatusBadRequest
		if api == "" {
			status = http.StatusNotFound
		}
		http.Error(w, "scriptedmodel: "+err.Error(), status)
		return
	}
	if reply.Usage == (Usage{}) {
		reply.Usage = Usage{Input: 1 + len(body)/4, Output: 1 + (len(reply.Thinking)+len(reply.Text))/4}
		for _, c := range reply.Calls {
			reply.Usage.Output += 1 + len(c.Input)/4
		}
	}
	switch api {
	case "count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 1 + len(body)/4})
	case "messages":
		s.messages(w, req.Model, req.Stream, reply)
	case "responses":
		s.responses(w, reply)
	}
}

func (s *Server) id(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_%d", prefix, s.ids)
}

func writeJSON(w http.ResponseWriter, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// sse writes server-sent events and flushes each.
type sse struct {
	w   http.ResponseWriter
	buf bytes.Buffer
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

// event writes one event whose data is v with "type" set to name first.
func (e *sse) event(name string, v map[string]any) {
	data, _ := json.Marshal(v, json.Deterministic(true))
	// "type" first, as the APIs send it (some clients peek at it).
	data = append([]byte(`{"type":`+quote(name)+`,`), data[1:]...)
	if len(v) == 0 {
		data = []byte(`{"type":` + quote(name) + `}`)
	}
	e.buf.Reset()
	fmt.Fprintf(&e.buf, "event: %s\ndata: %s\n\n", name, data)
	_, _ = e.w.Write(e.buf.Bytes())
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chunks splits s into a few deltas, so that streaming is exercised.
func chunks(s string) []string {
	words := strings.SplitAfter(s, " ")
	var out []string
	for i := 0; i < len(words); i += 4 {
		out = append(out, strings.Join(words[i:min(i+4, len(words))], ""))
	}
	return out
}

// inputString returns a call's input as the JSON text of its arguments
// (function tools) or the raw text (a JSON string: freeform tools).
func (c Call) inputString() (text string, freeform bool) {
	in := bytes.TrimSpace(c.Input)
	if len(in) > 0 && in[0] == '"' {
		var s string
		if json.Unmarshal(in, &s) == nil {
			return s, true
		}
	}
	if len(in) == 0 {
		return "{}", false
	}
	return string(in), false
}

func (s *Server) responses(w http.ResponseWriter, reply Reply) {
	e := newSSE(w)
	respID := s.id("resp")
	e.event("response.created", map[string]any{"response": map[string]any{"id": respID, "object": "response", "status": "in_progress", "output": []any{}}})
	out := 0
	if reply.Thinking != "" {
		id := s.id("rs")
		e.event("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
		e.event("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": out, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
		for _, d := range chunks(reply.Thinking) {
			e.event("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": out, "summary_index": 0, "delta": d})
		}
		e.event("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": out, "summary_index": 0, "text": reply.Thinking})
		e.event("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": out, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": reply.Thinking}})
		e.event("response.output_item.done", map[string]any{"output_index": out, "item": map[string]any{"type": "reasoning", "id": id, "summary": []any{map[string]any{"type": "summary_text", "text": reply.Thinking}}}})
		out++
	}
	if reply.Text != "" {
		id := s.id("msg")
		e.event("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
		e.event("response.content_part.added", map[string]any{"item_id": id, "output_index": out, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, d := range chunks(reply.Text) {
			e.event("response.output_text.delta", map[string]any{"item_id": id, "output_index": out, "content_index": 0, "delta": d})
		}
		e.event("response.output_text.done", map[string]any{"item_id": id, "output_index": out, "content_index": 0, "text": reply.Text})
		e.event("response.output_item.done", map[string]any{"output_index": out, "item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed", "content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}})
		out++
	}
	for _, c := range reply.Calls {
		id := s.id("fc")
		callID := c.ID
		if callID == "" {
			callID = s.id("call")
		}
		in, freeform := c.inputString()
		var item map[string]any
		if freeform {
			item = map[string]any{"type": "custom_tool_call", "id": id, "call_id": callID, "name": c.Name, "input": in, "status": "completed"}
		} else {
			item = map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": c.Name, "arguments": in, "status": "completed"}
		}
		e.event("response.output_item.added", map[string]any{"output_index": out, "item": item})
		e.event("response.output_item.done", map[string]any{"output_index": out, "item": item})
		out++
	}
	u := reply.Usage
	e.event("response.completed", map[string]any{"response": map[string]any{
		"id": respID, "object": "response", "status": "completed",
		"usage": map[string]any{
			"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": u.CachedInput},
			"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
			"total_tokens": u.Input + u.Output,
		},
	}})
}

func (s *Server) messages(w http.ResponseWriter, model string, stream bool, reply Reply) {
	msgID := s.id("msg")
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	u := reply.Usage
	usage := map[string]any{"input_tokens": u.Input, "output_tokens": u.Output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": u.CachedInput}
	type block struct {
		start map[string]any
		delta []map[string]any
		full  map[string]any
	}
	var blocks []block
	if reply.Thinking != "" {
		sig := "scripted-signature"
		b := block{start: map[string]any{"type": "thinking", "thinking": "", "signature": ""}, full: map[string]any{"type": "thinking", "thinking": reply.Thinking, "signature": sig}}
		for _, d := range chunks(reply.Thinking) {
			b.delta = append(b.delta, map[string]any{"type": "thinking_delta", "thinking": d})
		}
		b.delta = append(b.delta, map[string]any{"type": "signature_delta", "signature": sig})
		blocks = append(blocks, b)
	}
	if reply.Text != "" {
		b := block{start: map[string]any{"type": "text", "text": ""}, full: map[string]any{"type": "text", "text": reply.Text}}
		for _, d := range chunks(reply.Text) {
			b.delta = append(b.delta, map[string]any{"type": "text_delta", "text": d})
		}
		blocks = append(blocks, b)
	}
	for _, c := range reply.Calls {
		id := c.ID
		if id == "" {
			id = s.id("toolu")
		}
		in, _ := c.inputString()
		var input any
		_ = json.Unmarshal([]byte(in), &input)
		b := block{start: map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}, full: map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input}}
		b.delta = append(b.delta, map[string]any{"type": "input_json_delta", "partial_json": in})
		blocks = append(blocks, b)
	}
	if !stream {
		content := []any{}
		for _, b := range blocks {
			content = append(content, b.full)
		}
		writeJSON(w, map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model, "content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	e := newSSE(w)
	e.event("message_start", map[string]any{"message": map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": u.CachedInput}}})
	for i, b := range blocks {
		e.event("content_block_start", map[string]any{"index": i, "content_block": b.start})
		for _, d := range b.delta {
			e.event("content_block_delta", map[string]any{"index": i, "delta": d})
		}
		e.event("content_block_stop", map[string]any{"index": i})
	}
	e.event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": u.Output}})
	e.event("message_stop", map[string]any{})
}

// Wait waits until n replies of the script were given or ctx ends.
func (s *Server) Wait(ctx context.Context, n int) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for s.Used() < n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
