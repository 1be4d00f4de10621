package scriptedmodel

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, s Script) *Server {
	t.Helper()
	srv, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

type event struct {
	name string
	data map[string]any
}

// events parses a server-sent event stream; every event's data is JSON
// whose "type" is the event's name.
func events(t *testing.T, stream string) []event {
	t.Helper()
	var out []event
	sc := bufio.NewScanner(strings.NewReader(stream))
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("event %s: %v", name, err)
			}
			if d["type"] != name {
				t.Fatalf("event %s has type %v", name, d["type"])
			}
			out = append(out, event{name, d})
		}
	}
	return out
}

func names(evs []event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.name)
	}
	return strings.Join(s, " ")
}

var script = Script{
	{Thinking: "Think it over.", Text: "Calling.", Calls: []Call{{Name: "read", Input: jsontext.Value(`{"path":"a"}`), ID: "c1"}}},
	{Text: "Done.", Usage: Usage{Input: 10, Output: 2, CachedInput: 4, Reasoning: 1}},
}

// The Responses API streams reasoning, the message and a function call,
// then response.completed with usage; a request without tools (a side
// request) gets a text reply and does not consume the script.
func TestResponsesStream(t *testing.T) {
	s := start(t, script)
	status, body := post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true,"tools":[{"type":"function","name":"read"}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	evs := events(t, body)
	want := "response.created response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.done response.output_item.done " +
		"response.output_item.added response.output_item.done response.completed"
	if got := names(evs); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	call := evs[13].data["item"].(map[string]any)
	if call["type"] != "function_call" || call["name"] != "read" || call["arguments"] != `{"path":"a"}` || call["call_id"] != "c1" {
		t.Errorf("function call item %v", call)
	}
	if _, body := post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true}`); !strings.Contains(body, "Scripted.") {
		t.Errorf("side request: %s", body)
	}
	_, body = post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true,"tools":[{"type":"function","name":"read"}]}`)
	evs = events(t, body)
	usage := evs[len(evs)-1].data["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 10.0 || usage["output_tokens"] != 2.0 || usage["total_tokens"] != 12.0 {
		t.Errorf("usage %v", usage)
	}
	if s.Used() != 2 || len(s.Requests()) != 3 || s.Err() != nil {
		t.Errorf("used %d, %d requests, err %v", s.Used(), len(s.Requests()), s.Err())
	}
	// Past the end of the script (an agent that asks again once its turn
	// is over): a closing text, counted.
	if _, body := post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true,"tools":[{"type":"function","name":"read"}]}`); !strings.Contains(body, "Done.") || s.Past() != 1 || s.Err() != nil {
		t.Errorf("past the end: %d past, err %v: %s", s.Past(), s.Err(), body)
	}
}

// The Messages API streams thinking, text and tool_use blocks, and
// answers without streaming when the request does not ask for it.
func TestMessagesStream(t *testing.T) {
	s := start(t, script)
	_, body := post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"read","input_schema":{}}]}`)
	evs := events(t, body)
	got := names(evs)
	for _, w := range []string{"message_start content_block_start content_block_delta", "content_block_stop message_delta message_stop"} {
		if !strings.Contains(got, w) {
			t.Fatalf("events %s", got)
		}
	}
	var kinds []string
	for _, e := range evs {
		if e.name == "content_block_start" {
			kinds = append(kinds, e.data["content_block"].(map[string]any)["type"].(string))
		}
	}
	if strings.Join(kinds, " ") != "thinking text tool_use" {
		t.Errorf("blocks %v", kinds)
	}
	if stop := evs[len(evs)-2].data["delta"].(map[string]any)["stop_reason"]; stop != "tool_use" {
		t.Errorf("stop_reason %v", stop)
	}
	_, body = post(t, s.URL()+"/v1/messages", `{"model":"m","tools":[{"name":"read"}]}`)
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(body), &msg, json.RejectUnknownMembers(false)); err != nil || msg.StopReason != "end_turn" || len(msg.Content) != 1 || msg.Content[0].Text != "Done." {
		t.Errorf("non-streamed reply %s (%v)", body, err)
	}
	if _, body := post(t, s.URL()+"/v1/messages/count_tokens", `{"model":"m"}`); !strings.Contains(body, "input_tokens") {
		t.Errorf("count_tokens: %s", body)
	}
}

// A call to a tool the request does not offer, and a path the server does
// not serve, fail the request and are kept in Err.
func TestMismatchesAreErrors(t *testing.T) {
	s := start(t, script)
	if status, body := post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"write"},{"name":"edit"}]}`); status != 400 || !strings.Contains(body, `"read"`) {
		t.Errorf("unoffered tool: %d %s", status, body)
	}
	if status, _ := post(t, s.URL()+"/v1/other", `{}`); status != 404 {
		t.Errorf("unserved path: %d", status)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "does not offer") || !strings.Contains(err.Error(), "/v1/other") {
		t.Errorf("Err: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Wait(ctx, 5); err == nil {
		t.Error("Wait returned before the script was used")
	}
}

func TestListenRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:80"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		}
	}
}

// Chat completions stream reasoning_content, content and tool_calls
// deltas, the finish reason with usage, then [DONE]; arguments given by
// meaning are filled into the tool's own schema.
func TestChatCompletions(t *testing.T) {
	s := start(t, Script{
		{Thinking: "Hmm.", Text: "Reading.", Calls: []Call{{Names: []string{"Read", "read_file"}, Args: map[string]any{"path": "/ws/a.txt"}, Optional: map[string]any{"description": "Read a"}}}},
		{Text: "Done.", Usage: Usage{Input: 7, Output: 3, CachedInput: 2, Reasoning: 1}},
	})
	tools := `"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"absolute_path":{"type":"string"},"limit":{"type":"integer"},"mode":{"type":"string","enum":["text","bytes"]}},"required":["absolute_path","mode"]}}},{"type":"function","function":{"name":"write_file"}}]`
	status, body := post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true,`+tools+`}`)
	if status != 200 || !strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]") {
		t.Fatalf("status %d: %s", status, body)
	}
	for _, want := range []string{`"reasoning_content":"Hmm."`, `"content":"Reading."`, `"name":"read_file"`,
		`"arguments":"{\"absolute_path\":\"/ws/a.txt\",\"mode\":\"text\"}"`, `"finish_reason":"tool_calls"`} {
		if !strings.Contains(body, want) {
			t.Errorf("stream lacks %s:\n%s", want, body)
		}
	}
	_, body = post(t, s.URL()+"/v1/chat/completions", `{"model":"m",`+tools+`}`)
	if !strings.Contains(body, `"finish_reason":"stop"`) || !strings.Contains(body, `"prompt_tokens":7`) || !strings.Contains(body, `"cached_tokens":2`) {
		t.Errorf("non-streamed: %s", body)
	}
	if s.Used() != 2 || s.Err() != nil {
		t.Errorf("used %d, err %v", s.Used(), s.Err())
	}
}

// The Gemini API: streamGenerateContent as server-sent events with a
// thought part, text parts and a functionCall; generateContent,
// countTokens and the model list; a single-tool side request is answered
// with that tool.
func TestGemini(t *testing.T) {
	s := start(t, Script{{Thinking: "Plan.", Text: "Running.", Calls: []Call{{Names: []string{"run_shell_command"}, Args: map[string]any{"command": "ls"}}}}, {Text: "Bye."}})
	tools := `"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}},{"name":"read_file"}]}]`
	status, body := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `{"contents":[],`+tools+`}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	for _, want := range []string{`"thought":true`, `"text":"Running."`, `"functionCall":{"args":{"command":"ls"},"name":"run_shell_command"}`, `"finishReason":"STOP"`, `"usageMetadata"`, `"modelVersion":"gemini-2.5-pro"`} {
		if !strings.Contains(body, want) {
			t.Errorf("stream lacks %s:\n%s", want, body)
		}
	}
	if _, body := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:generateContent", `{"contents":[],`+tools+`}`); !strings.Contains(body, `"text":"Bye."`) {
		t.Errorf("generateContent: %s", body)
	}
	if _, body := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:countTokens", `{"contents":[]}`); !strings.Contains(body, `"totalTokens"`) {
		t.Errorf("countTokens: %s", body)
	}
	if _, body := post(t, s.URL()+"/v1beta/models/x:generateContent", `{"tools":[{"functionDeclarations":[{"name":"next_speaker","parameters":{"type":"object","properties":{"next_speaker":{"type":"string","enum":["user","model"]}},"required":["next_speaker"]}}]}]}`); !strings.Contains(body, `"args":{"next_speaker":"user"}`) {
		t.Errorf("a single-tool side request: %s", body)
	}
	res, err := http.Get(s.URL() + "/v1beta/models")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(data), `"id":"scripted-model"`) {
		t.Errorf("model list: %s", data)
	}
	if s.Used() != 2 || s.Err() != nil {
		t.Errorf("used %d, err %v", s.Used(), s.Err())
	}
}

// A slow reply waits after its first event until its delay passes or the
// client goes away.
func TestSlowReply(t *testing.T) {
	s := start(t, Script{{Text: "Slowly.", Delay: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(`{"model":"m","stream":true,"tools":[{"name":"a"},{"name":"b"}]}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, "message_start") {
		t.Fatalf("first event: %q %v", line, err)
	}
	began := time.Now()
	cancel()
	res.Body.Close()
	if err := s.Close(); err != nil || time.Since(began) > 10*time.Second {
		t.Errorf("close: %v after %v", err, time.Since(began))
	}
}

func TestFill(t *testing.T) {
	schema := jsontext.Value(`{"type":"object","properties":{"filePath":{"type":"string"},"content":{"type":"string"},"overwrite":{"type":"boolean","default":true},"n":{"type":["integer","null"]}},"required":["filePath","content","overwrite","n"]}`)
	got, err := Fill(schema, map[string]any{"path": "/ws/s.txt", "content": "x"}, map[string]any{"description": "d"})
	if err != nil || string(got) != `{"content":"x","filePath":"/ws/s.txt","n":0,"overwrite":true}` {
		t.Errorf("%s %v", got, err)
	}
	if _, err := Fill(schema, map[string]any{"command": "ls"}, nil); err == nil || !strings.Contains(err.Error(), `no property for "command"`) {
		t.Errorf("an argument the tool has no property for: %v", err)
	}
	if got, err := Fill(nil, map[string]any{"a": 1}, nil); err != nil || string(got) != `{"a":1}` {
		t.Errorf("no schema: %s %v", got, err)
	}
}
