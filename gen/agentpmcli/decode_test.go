package agentpmcli_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/agentpmcli"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Each of the eight categories is its own typed error; a category this
// version does not know reads as other; the retryable ones are timeout and
// subprocess_failure.
func TestRunErrorCategories(t *testing.T) {
	for _, tc := range []struct {
		category  string
		want      error
		retryable bool
	}{
		{"resolution", agentpmcli.ErrResolution, false},
		{"runtime", agentpmcli.ErrRuntime, false},
		{"schema", agentpmcli.ErrSchema, false},
		{"timeout", agentpmcli.ErrTimeout, true},
		{"output_limit", agentpmcli.ErrOutputLimit, false},
		{"malformed_output", agentpmcli.ErrMalformedOutput, false},
		{"subprocess_failure", agentpmcli.ErrSubprocessFailure, true},
		{"other", agentpmcli.ErrOther, false},
		{"quota", agentpmcli.ErrOther, false},
	} {
		out := `{"schema_version":1,"status":"error","error":{"category":"` + tc.category + `","message":"it failed"}}` + "\n"
		r, err := agentpmcli.ParseRunOutput([]byte(out))
		if err != nil {
			t.Fatalf("%s: %v", tc.category, err)
		}
		_, rerr := r.Output()
		var re *agentpmcli.RunError
		if !errors.Is(rerr, tc.want) || !errors.As(rerr, &re) || string(re.Category) != tc.category || re.Retryable() != tc.retryable ||
			re.Category.Known() != (tc.category != "quota") || !strings.Contains(rerr.Error(), "failed with "+tc.category+" error: it failed") {
			t.Errorf("%s: %v", tc.category, rerr)
		}
		for _, other := range []error{agentpmcli.ErrResolution, agentpmcli.ErrTimeout, agentpmcli.ErrOther} {
			if other != tc.want && errors.Is(rerr, other) {
				t.Errorf("%s matches %v too", tc.category, other)
			}
		}
	}
}

// What the Harness reads from agentpm run --machine's stdout.
func TestParseRunOutput(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		output    string // the output, when the run succeeded
		want      error  // the run's error (or the parse error)
	}{
		{"success", `{"schema_version":1,"status":"success","tool":{"package":"@zack/echo-json","version":"0.1.0"},"output":{"message":"hello"}}`, `{"message":"hello"}`, nil},
		{"success without output", `{"schema_version":1,"status":"success","tool":{"package":"p","version":"1"}}`, `null`, nil},
		{"a domain failure is still a success", `{"schema_version":1,"status":"success","tool":{"package":"p","version":"1"},"output":{"ok":false}}`, `{"ok":false}`, nil},
		{"surrounding whitespace", "\n  " + `{"schema_version":1,"status":"success","tool":{"package":"p","version":"1"},"output":1}` + " \r\n", `1`, nil},
		{"error without error member", `{"schema_version":1,"status":"error"}`, "", agentpmcli.ErrOther},
		{"unknown status", `{"schema_version":1,"status":"queued"}`, "", agentpmcli.ErrMalformedOutput},
		{"schema version 2", `{"schema_version":2,"status":"success","tool":{"package":"p","version":"1"}}`, "", agentpmcli.ErrMalformedOutput},
		{"no schema version", `{"status":"success","tool":{"package":"p","version":"1"}}`, "", agentpmcli.ErrMalformedOutput},
		{"not JSON", `tool printed prose`, "", agentpmcli.ErrMalformedOutput},
		{"two documents", `{"schema_version":1,"status":"error"} {}`, "", agentpmcli.ErrMalformedOutput},
		{"empty", ``, "", agentpmcli.ErrMalformedOutput},
	} {
		r, err := agentpmcli.ParseRunOutput([]byte(tc.out))
		if err == nil {
			var out []byte
			out, err = r.Output()
			if tc.want == nil && string(out) != tc.output {
				t.Errorf("%s: output %s, want %s", tc.name, out, tc.output)
			}
		}
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// knowledge query --json writes pretty-printed JSON; its rows become the
// retrieve result the Harness's local vector retrieval answers with.
func TestKnowledgeQuery(t *testing.T) {
	out := `{
  "target": "@zack/python-docs",
  "name": "@zack/python-docs",
  "version": "1.2.3",
  "mode": "vector",
  "query": {"algorithm": "exact", "metric": "cosine", "normalized": true, "include_text": true, "include_metadata": true},
  "results": [
    {"row": 4, "score": 0.93, "chunk_id": "c1", "source_id": "s1", "source_title": "Guide", "source_uri": null,
     "text": "Auth uses tokens.", "chunk_metadata": {"section": "auth"}, "source_metadata": null},
    {"row": 0, "score": 0.5, "chunk_id": "c2", "source_id": "s2", "source_title": null, "source_uri": "docs/api.md",
     "text": null, "chunk_metadata": null, "source_metadata": null}
  ]
}
`
	q, err := agentpmcli.DecodeKnowledgeQuery([]byte(out))
	if err != nil || len(q.Results) != 2 || q.Results[0].Row != 4 || q.Results[1].Text != nil {
		t.Fatalf("%+v %v", q, err)
	}
	query := "How does auth work?"
	req := &agentpmservice.KnowledgeRuntimeRequest{Package: "@zack/python-docs", Version: "1.2.3", Mode: agentpmservice.KnowledgeRequestModeVectorQuery, Query: &query}
	got, err := json.Marshal(q.RuntimeResult(req), wire.Fidelity)
	want := `{"ok":true,"package":"@zack/python-docs","version":"1.2.3","mode":"vector_query","query":"How does auth work?","results":[` +
		`{"rank":1,"score":0.93,"chunk_id":"c1","source_id":"s1","source_title":"Guide","text":"Auth uses tokens.","chunk_metadata":{"section":"auth"}},` +
		`{"rank":2,"score":0.5,"chunk_id":"c2","source_id":"s2","source_uri":"docs/api.md"}],` +
		`"citations":[{"chunk_id":"c1","source_id":"s1","title":"Guide"},{"chunk_id":"c2","source_id":"s2","uri":"docs/api.md"}]}`
	if err != nil || string(got) != want {
		t.Fatalf("runtime result:\n got %s\nwant %s", got, want)
	}
	no := false
	req.ReturnCitations = &no
	if r := q.RuntimeResult(req); r.Citations != nil || len(r.Results) != 2 {
		t.Fatalf("return_citations false: %+v", r)
	}
	if _, err := agentpmcli.DecodeKnowledgeQuery([]byte(`{"target":"x"}`)); !errors.Is(err, wire.ErrMissingMember) {
		t.Fatalf("missing members: %v", err)
	}
	if _, err := agentpmcli.DecodeKnowledgeQuery([]byte(strings.Replace(out, `"vector"`, `"context"`, 1))); !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("only vector mode: %v", err)
	}
}

// The agentpm-mcp-machine stream: every line checked against the
// protocol's gates, unknown events kept, bad lines reported and skipped.
func TestMCPMachineEvents(t *testing.T) {
	stream := strings.Join([]string{
		`{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"ready","timestamp":"2025-06-01T10:00:00.000001Z","fields":{"host":"127.0.0.1","port":40111,"endpoint":"http://127.0.0.1:40111/mcp","tools":[{"mcp_name":"zack__echo_json","identity":"@zack/echo-json","version":"0.1.0"}]}}`,
		``,
		`{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"tool_call_failed","timestamp":"t","fields":{"call_id":"mcp-call-1","mcp_name":"m","identity":"i","error":{"code":-32002,"message":"tool execution timed out"}}}`,
		`{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"paused","timestamp":"t","fields":{"why":"maintenance"}}`,
		`{"schema_version":1,"protocol":"agentpm-harness-machine","version":1,"event":"paused","timestamp":"t","fields":{}}`,
		`{"schema_version":1,"protocol":"agentpm-mcp-machine","version":2,"event":"stopped","timestamp":"t","fields":{"reason":"server_stopped"}}`,
		`{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"stopped","timestamp":"t"}`,
		`listening on 127.0.0.1:40111`,
		`{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"stopped","timestamp":"t","fields":{"reason":"server_stopped"}}`,
	}, "\n")
	var got []string
	for ev, err := range agentpmcli.MCPMachineEvents(iotest.OneByteReader(strings.NewReader(stream))) {
		switch {
		case errors.Is(err, envelope.ErrProtocol):
			got = append(got, "wrong protocol")
		case errors.Is(err, envelope.ErrVersion):
			got = append(got, "wrong version")
		case errors.Is(err, wire.ErrMissingMember):
			got = append(got, "missing member")
		case errors.Is(err, envelope.ErrMalformed):
			got = append(got, "malformed")
		case err != nil:
			t.Fatalf("unexpected error: %v", err)
		case ev.ToolCallFailed != nil:
			got = append(got, "failed "+ev.ToolCallFailed.Fields.Error.Message)
		case ev.Unknown != nil:
			got = append(got, "unknown "+ev.Tag())
		default:
			got = append(got, ev.Tag())
		}
	}
	want := "ready|failed tool execution timed out|unknown paused|wrong protocol|wrong version|missing member|malformed|stopped"
	if strings.Join(got, "|") != want {
		t.Fatalf("events:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	// A read error ends the stream, after everything read before it.
	boom := errors.New("boom")
	var n int
	for _, err := range agentpmcli.MCPMachineEvents(io.MultiReader(strings.NewReader(`{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"stopped","timestamp":"t","fields":{"reason":"x"}}`+"\n"), iotest.ErrReader(boom))) {
		n++
		if n == 2 && !errors.Is(err, boom) {
			t.Fatalf("the read error: %v", err)
		}
	}
	if n != 2 {
		t.Fatalf("%d items", n)
	}
	// A line over the limit is reported, and reading goes on.
	long := `{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"x","timestamp":"t","fields":{"pad":"` + strings.Repeat("a", ndjson.DefaultMaxFrame) + `"}}`
	var tooLarge, after bool
	for ev, err := range agentpmcli.MCPMachineEvents(strings.NewReader(long + "\n" + `{"schema_version":1,"protocol":"agentpm-mcp-machine","version":1,"event":"stopped","timestamp":"t","fields":{"reason":"x"}}` + "\n")) {
		tooLarge = tooLarge || errors.Is(err, ndjson.ErrFrameTooLarge)
		after = after || (err == nil && ev.Stopped != nil)
	}
	if !tooLarge || !after {
		t.Fatalf("too large: %v, read on: %v", tooLarge, after)
	}
}
