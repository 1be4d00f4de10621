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
	// Past the end of the script: an error, reported.
	if status, _ := post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true,"tools":[{"type":"function","name":"read"}]}`); status != 400 || s.Err() == nil {
		t.Errorf("past the end: status %d, err %v", status, s.Err())
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
	if status, body := post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"write"}]}`); status != 400 || !strings.Contains(body, `"read"`) {
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
