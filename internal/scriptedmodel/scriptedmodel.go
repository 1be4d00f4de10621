// Package scriptedmodel is a model endpoint for tests: an HTTP server that
// answers the model calls of real coding agents from a script instead of a
// model, so that whole agent turns (thinking, plans, tool calls, tool
// results, usage) run on 127.0.0.1 with no credentials and no network.
//
// It speaks every API the ACP agents from npm call:
//   - the OpenAI Responses API, POST {base}/responses, streamed (codex,
//     codex-acp);
//   - the Anthropic Messages API, POST {base}/v1/messages, streamed or not,
//     and POST {base}/v1/messages/count_tokens (Claude Code, and so
//     claude-agent-acp; pi with an anthropic model);
//   - OpenAI chat completions, POST {base}/chat/completions, streamed or
//     not, thinking as delta.reasoning_content (qwen-code, opencode with an
//     openai-compatible provider);
//   - the Gemini API, POST {base}/v1beta/models/MODEL:streamGenerateContent
//     (server-sent events), :generateContent and :countTokens, and
//     GET {base}/v1beta/models (gemini-cli);
//   - a model list, GET {base}/models and {base}/v1/models, in a shape that
//     both OpenAI's and Anthropic's clients read.
//
// A Script is the list of replies the model gives to the agent's main
// requests, in order. A request is main when it offers tools (an agent's
// turn always does); other requests (a title, a quota probe, a check of
// who speaks next) get a short text reply and do not consume the script.
// A reply can stream thinking, text and tool calls, reports usage, and can
// be slow (Reply.Delay: a turn still running when a test cancels it).
//
// A tool call names the tool, or several a reply may use (Call.Names: the
// first the request offers wins), and gives its arguments exactly (Input)
// or by meaning (Args): "path", "content", "command", ... are then filled
// into the properties of the tool's own schema, as the request declares it
// (a path into file_path, filePath, absolute_path or path, whichever it
// has), and its other required properties get their schema's default or a
// value of their type. A call naming no tool the request offers fails the
// request with HTTP 400 and the mismatch is kept in Errors, so that a test
// fails with the tools the agent did offer. Every request is kept
// (Requests) for the test to inspect, including those to paths the server
// does not serve, which are answered 404 and are also an error.
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
	// Responses API, a thinking block on the Messages API, a thought part
	// on the Gemini API, reasoning_content in chat completions), when not
	// empty.
	Thinking string
	// Text is streamed next, as the assistant's message, when not empty.
	Text string
	// Calls are the tool calls the reply ends with; a reply without calls
	// ends the agent's turn.
	Calls []Call
	// Usage is reported for the reply; zero values are reported as small
	// counts derived from the request and reply sizes.
	Usage Usage
	// Delay, when set, makes the reply slow: after its first streamed
	// event it waits Delay, or until the client goes away (an agent that
	// cancels its turn closes the request), before the rest.
	Delay time.Duration
}

// Call is one tool call.
type Call struct {
	// Name is the tool's name as the request offers it ("Read",
	// "exec_command", "read_file", ...). Names, instead, lists the names
	// of tools of one meaning across agents: the first the request offers
	// is called.
	Name  string
	Names []string
	// Input is the call's arguments, exactly: a JSON object for a function
	// tool, or a JSON string for a freeform (custom) tool such as codex's
	// apply_patch, whose raw text is the string's value.
	Input jsontext.Value
	// Args, when Input is nil, are the call's arguments by meaning, filled
	// into the tool's schema (see Fill): {"path": "/ws/notes.txt"} becomes
	// {"file_path": ...} for Claude's Read and {"filePath": ...} for
	// opencode's read. Optional are filled the same way where the schema
	// has a property for them, and left out where it has none (a
	// description some tools ask for).
	Args, Optional map[string]any
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
	// API is "responses", "messages", "count_tokens", "chat", "gemini",
	// "gemini_count_tokens", "models" or "" (not served).
	API string
	// Main reports whether the request consumed a reply of the script.
	Main bool
	// Reply is the index in the script of the reply it got, or -1.
	Reply int
	// Model is the request's model (its "model" member, or the Gemini
	// path's).
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
	past     int
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

// main reports whether a request offering tools is one of the turn's (it
// gets the script's next reply): one that offers several tools, or one
// tool that the script calls somewhere. A request offering a single tool
// that no reply calls (qwen's respond_in_schema, to check who speaks
// next) is a side request. Called with s.mu held.
func (s *Server) main(tools []string) bool {
	if len(tools) != 1 {
		return len(tools) > 1
	}
	for _, r := range s.script {
		for _, c := range r.Calls {
			if c.Name == tools[0] || slices.Contains(c.Names, tools[0]) {
				return true
			}
		}
	}
	return false
}

// Past returns how many main requests came once the script was used up
// (each answered with a closing text).
func (s *Server) Past() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.past
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

// request is the part of a model request the server reads: the model, and
// the tools with their schemas, in any of the APIs' shapes.
type request struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name        string         `json:"name"`
		Type        string         `json:"type"`
		Parameters  jsontext.Value `json:"parameters"`   // Responses
		InputSchema jsontext.Value `json:"input_schema"` // Messages
		Function    *struct {      // chat completions
			Name       string         `json:"name"`
			Parameters jsontext.Value `json:"parameters"`
		} `json:"function"`
		FunctionDeclarations []struct { // Gemini
			Name                 string         `json:"name"`
			Parameters           jsontext.Value `json:"parameters"`
			ParametersJSONSchema jsontext.Value `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// tool is one offered tool: its name and the JSON Schema of its arguments
// (nil when the request gives none).
type tool struct {
	name   string
	schema jsontext.Value
}

// tools lists the tools of r.
func (r *request) tools() []tool {
	var out []tool
	for _, t := range r.Tools {
		switch {
		case len(t.FunctionDeclarations) > 0:
			for _, f := range t.FunctionDeclarations {
				schema := f.ParametersJSONSchema
				if len(schema) == 0 {
					schema = f.Parameters
				}
				out = append(out, tool{f.Name, schema})
			}
		case t.Function != nil:
			out = append(out, tool{t.Function.Name, t.Function.Parameters})
		case t.Name != "":
			schema := t.InputSchema
			if len(schema) == 0 {
				schema = t.Parameters
			}
			out = append(out, tool{t.Name, schema})
		case t.Type != "":
			out = append(out, tool{name: t.Type}) // a built-in tool such as web_search
		}
	}
	return out
}

// route says which API a request calls, and the model a Gemini path names.
func route(r *http.Request) (api, model string) {
	p := r.URL.Path
	if i := strings.LastIndex(p, "/models/"); i >= 0 && strings.Contains(p[i:], ":") {
		name, verb, _ := strings.Cut(p[i+len("/models/"):], ":")
		switch {
		case r.Method != http.MethodPost:
		case verb == "streamGenerateContent" || verb == "generateContent":
			return "gemini", name
		case verb == "countTokens":
			return "gemini_count_tokens", name
		}
		return "", name
	}
	switch {
	case r.Method == http.MethodGet && (strings.HasSuffix(p, "/models") || strings.Contains(p, "/models/")):
		return "models", ""
	case r.Method != http.MethodPost:
		return "", ""
	case strings.HasSuffix(p, "/messages/count_tokens"):
		return "count_tokens", ""
	case strings.HasSuffix(p, "/messages"):
		return "messages", ""
	case strings.HasSuffix(p, "/responses"):
		return "responses", ""
	case strings.HasSuffix(p, "/chat/completions"):
		return "chat", ""
	}
	return "", ""
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err == nil && len(body) > MaxBody {
		err = fmt.Errorf("body over %d bytes", MaxBody)
	}
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Reply: -1, Body: body, Header: r.Header.Clone()}
	api, pathModel := route(r)
	rec.API = api
	var req request
	if err == nil && api != "" && api != "models" {
		if err = json.Unmarshal(body, &req, json.RejectUnknownMembers(false)); err != nil {
			err = fmt.Errorf("decoding the body: %w", err)
		}
	}
	if req.Model == "" {
		req.Model = pathModel
	}
	rec.Model = req.Model
	tools := req.tools()
	for _, t := range tools {
		rec.Tools = append(rec.Tools, t.name)
	}
	var reply Reply
	s.mu.Lock()
	switch {
	case err != nil || api == "" || api == "models":
	case (api == "responses" || api == "messages" || api == "chat" || api == "gemini") && s.main(rec.Tools):
		rec.Main = true
		if s.next < len(s.script) {
			rec.Reply = s.next
			reply = s.script[s.next]
			s.next++
		} else {
			// An agent that asks again once its turn is over (Claude
			// Code's suggestions): an answer that ends the turn, counted.
			s.past++
			reply = Reply{Text: "Done."}
		}
	case len(tools) == 1 && tools[0].schema != nil:
		// A side request that must answer with its one tool (qwen's
		// respond_in_schema): that tool, its arguments the schema's
		// defaults.
		reply = Reply{Calls: []Call{{Name: tools[0].name, Args: map[string]any{}}}}
	default:
		reply = Reply{Text: "Scripted."}
	}
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	where := r.Method + " " + r.URL.Path
	if err == nil && api == "" {
		err = errors.New("not a model API this server serves")
	}
	var calls []resolved
	if err == nil {
		calls, err = resolve(reply.Calls, tools)
		if err != nil {
			err = fmt.Errorf("reply %d: %w", rec.Reply+1, err)
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
		for _, c := range calls {
			reply.Usage.Output += 1 + len(c.input)/4
		}
	}
	t := &turn{s: s, w: w, r: r, reply: reply, calls: calls, model: req.Model}
	switch api {
	case "models":
		writeJSON(w, modelList())
	case "count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 1 + len(body)/4})
	case "gemini_count_tokens":
		writeJSON(w, map[string]any{"totalTokens": 1 + len(body)/4})
	case "messages":
		t.messages(req.Stream)
	case "responses":
		t.responses()
	case "chat":
		t.chat(req.Stream)
	case "gemini":
		t.gemini(strings.Contains(r.URL.Path, ":streamGenerateContent"))
	}
}

// resolved is a call of a reply made for one request: the tool's name as
// offered, and its arguments.
type resolved struct {
	id, name string
	input    jsontext.Value
}

// text returns the call's input as the JSON text of its arguments
// (function tools) or the raw text (a JSON string: freeform tools).
func (c resolved) text() (string, bool) { return Call{Input: c.input}.inputString() }

// resolve picks, for each call, the tool the request offers, and fills its
// arguments from Args when Input is not given.
func resolve(calls []Call, tools []tool) ([]resolved, error) {
	var names []string
	for _, t := range tools {
		names = append(names, t.name)
	}
	var out []resolved
	for _, c := range calls {
		wanted := c.Names
		if c.Name != "" {
			wanted = append([]string{c.Name}, wanted...)
		}
		i := slices.IndexFunc(wanted, func(n string) bool { return slices.Contains(names, n) })
		if i < 0 {
			return nil, fmt.Errorf("it calls %s, which the request does not offer (it offers %s)", quoteAll(wanted), strings.Join(names, ", "))
		}
		rc := resolved{id: c.ID, name: wanted[i], input: c.Input}
		if rc.input == nil {
			var schema jsontext.Value
			for _, t := range tools {
				if t.name == rc.name {
					schema = t.schema
				}
			}
			in, err := Fill(schema, c.Args, c.Optional)
			if err != nil {
				return nil, fmt.Errorf("filling %s's arguments: %w", rc.name, err)
			}
			rc.input = in
		}
		out = append(out, rc)
	}
	return out, nil
}

func quoteAll(names []string) string {
	var q []string
	for _, n := range names {
		q = append(q, quote(n))
	}
	if len(q) == 0 {
		return "no tool"
	}
	return strings.Join(q, " or ")
}

// modelList is the answer to a model list: OpenAI's shape ({object, data:
// [{id, object, created, owned_by}]}) with the members Anthropic's adds
// (type, display_name, created_at, has_more, first_id, last_id).
func modelList() map[string]any {
	var data []any
	for _, id := range ModelIDs {
		data = append(data, map[string]any{"id": id, "object": "model", "created": 1767225600, "owned_by": "scripted",
			"type": "model", "display_name": id, "created_at": "2026-01-01T00:00:00Z"})
	}
	return map[string]any{"object": "list", "data": data, "has_more": false, "first_id": ModelIDs[0], "last_id": ModelIDs[len(ModelIDs)-1]}
}

// ModelIDs are the models the model list names.
var ModelIDs = []string{"scripted-model"}

// turn is one reply being written.
type turn struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	reply Reply
	calls []resolved
	model string
	slept bool
}

// pause waits the reply's Delay once, after the first streamed event, or
// until the client goes away.
func (t *turn) pause() {
	if t.slept || t.reply.Delay <= 0 {
		return
	}
	t.slept = true
	timer := time.NewTimer(t.reply.Delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.r.Context().Done():
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
	e.flush()
}

func (e *sse) flush() {
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

func (t *turn) responses() {
	s, reply := t.s, t.reply
	e := newSSE(t.w)
	respID := s.id("resp")
	e.event("response.created", map[string]any{"response": map[string]any{"id": respID, "object": "response", "status": "in_progress", "output": []any{}}})
	t.pause()
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
	for _, c := range t.calls {
		id := s.id("fc")
		callID := c.id
		if callID == "" {
			callID = s.id("call")
		}
		in, freeform := c.text()
		var item map[string]any
		if freeform {
			item = map[string]any{"type": "custom_tool_call", "id": id, "call_id": callID, "name": c.name, "input": in, "status": "completed"}
		} else {
			item = map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": c.name, "arguments": in, "status": "completed"}
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

func (t *turn) messages(stream bool) {
	s, reply, model := t.s, t.reply, t.model
	msgID := s.id("msg")
	stop := "end_turn"
	if len(t.calls) > 0 {
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
	for _, c := range t.calls {
		id := c.id
		if id == "" {
			id = s.id("toolu")
		}
		in, _ := c.text()
		var input any
		_ = json.Unmarshal([]byte(in), &input)
		b := block{start: map[string]any{"type": "tool_use", "id": id, "name": c.name, "input": map[string]any{}}, full: map[string]any{"type": "tool_use", "id": id, "name": c.name, "input": input}}
		b.delta = append(b.delta, map[string]any{"type": "input_json_delta", "partial_json": in})
		blocks = append(blocks, b)
	}
	if !stream {
		t.pause()
		content := []any{}
		for _, b := range blocks {
			content = append(content, b.full)
		}
		writeJSON(t.w, map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model, "content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	e := newSSE(t.w)
	e.event("message_start", map[string]any{"message": map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": u.CachedInput}}})
	t.pause()
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
