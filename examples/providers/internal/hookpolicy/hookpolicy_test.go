package hookpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func load(t testing.TB) *Engine {
	t.Helper()
	e, err := Load("testdata/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func result(t testing.TB, d *Decision) string {
	t.Helper()
	r, err := d.Result()
	if err != nil {
		t.Fatal(err)
	}
	return string(r)
}

func TestEvaluate(t *testing.T) {
	e := load(t)
	for _, tc := range []struct {
		name   string
		hook   HookID
		input  string
		rule   string // "" for the default
		result string
	}{
		{"secret file", BeforeToolCall, `{"phase_id":"p","tool":"@zack/read-file","arguments":{"path":"config/../app/.env"}}`,
			"no-secret-files", `{"decision":"reject","reason":"tools may not touch secrets or system files"}`},
		{"absolute system path", BeforeToolCall, `{"phase_id":"p","tool":"@zack/read-file","arguments":{"opts":{"file":"/etc/passwd"}}}`,
			"no-secret-files", `{"decision":"reject","reason":"tools may not touch secrets or system files"}`},
		{"path under an unlisted key is not a path", BeforeToolCall, `{"phase_id":"p","tool":"@zack/read-file","arguments":{"note":"/etc/passwd"}}`,
			"", `{"decision":"continue"}`},
		{"shell tool, generated reason", BeforeToolCall, `{"phase_id":"p","tool":"shell","arguments":{}}`,
			"no-shell", `{"decision":"reject","reason":"rejected by policy rule no-shell: tool \"shell\" matches \"shell\""}`},
		{"shell candidate rejects the selection", BeforeToolSelection, `{"phase":{},"candidates":[{"canonical_id":"@zack/exec-sh","description":"","source":"agentpm"}]}`,
			"no-shell", `{"decision":"reject","reason":"rejected by policy rule no-shell: tool \"@zack/exec-sh\" matches \"*/exec-*\""}`},
		{"redacted arguments", BeforeToolCall, `{"phase_id":"p","tool":"@zack/http","arguments":{"url":"https://x","headers":["api_key: abc123"],"token":"sk-ABCDEFGH12"}}`,
			"hide-tokens", `{"decision":"continue","patch":{"arguments":{"headers":["api_key: [REDACTED]"],"token":"[REDACTED]","url":"https://x"}}}`},
		{"redacted memory content", BeforeMemoryWrite, `{"phase_id":"p","package":"@acme/notes","space":"notes","record_type":"note","scope":{},"content":{"body":"key sk-12345678xyz"}}`,
			"hide-tokens", `{"decision":"continue","patch":{"content":{"body":"key [REDACTED]"}}}`},
		{"redacted retrieval", AfterKnowledgeRetrieval, `{"phase_id":"p","result":{"ok":true,"package":"p","version":"1","mode":"vector_query","content":"use API-KEY=hunter2 here","results":[{"rank":1,"score":1,"chunk_id":"c1","source_id":"s1","text":"sk-AAAAAAAAAA"},{"rank":2,"score":0.5,"chunk_id":"c2","source_id":"s2","text":"clean"}]}}`,
			"hide-tokens", `{"decision":"continue","patch":{"content":"use API-KEY=[REDACTED] here","results":[{"chunk_id":"c1","source_id":"s1","text":"[REDACTED]"},{"chunk_id":"c2","source_id":"s2","text":"clean"}]}}`},
		{"tools removed", BeforeToolSelection, `{"phase":{},"candidates":[{"canonical_id":"deploy.prod","description":"","source":"mcp"},{"canonical_id":"@zack/read","description":"","source":"agentpm"},{"canonical_id":"@zack/release","description":"","source":"agentpm"}]}`,
			"no-deploy-tools", `{"decision":"continue","patch":{"candidate_ids":["@zack/read"]}}`},
		{"all tools removed", BeforeToolSelection, `{"phase":{},"candidates":[{"canonical_id":"deploy.x","description":"","source":"mcp"}]}`,
			"no-deploy-tools", `{"decision":"continue","patch":{"candidate_ids":[]}}`},
		{"nothing to remove: continue without patch", BeforeToolSelection, `{"phase":{},"candidates":[{"canonical_id":"@zack/read","description":"","source":"agentpm"}]}`,
			"no-deploy-tools", `{"decision":"continue"}`},
		{"top_k capped", BeforeKnowledgeRequest, `{"phase_id":"p","request":{"package":"@zack/docs","version":"1","mode":"vector_query","query":"q","top_k":10}}`,
			"small-retrievals", `{"decision":"continue","patch":{"top_k":3}}`},
		{"top_k absent gets the cap", BeforeKnowledgeRequest, `{"phase_id":"p","request":{"package":"@zack/docs","version":"1","mode":"vector_query","query":"q"}}`,
			"small-retrievals", `{"decision":"continue","patch":{"top_k":3}}`},
		{"top_k within the cap", BeforeKnowledgeRequest, `{"phase_id":"p","request":{"package":"@zack/docs","version":"1","mode":"vector_query","query":"q","top_k":2}}`,
			"small-retrievals", `{"decision":"continue"}`},
		{"private space", BeforeMemoryRead, `{"phase_id":"p","package":"@zack/notes","space":"private-journal","scope":{}}`,
			"project-memory-only", `{"decision":"reject","reason":"private spaces are off limits to this agent"}`},
		{"other package's private space", BeforeMemoryRead, `{"phase_id":"p","package":"@acme/notes","space":"private-journal","scope":{}}`,
			"", `{"decision":"continue"}`},
		{"guidance", BeforeMemoryOperation, `{"phase_id":"p","package":"@zack/notes","operation":"summarize","scope":{},"source_summary":{}}`,
			"guidance", `{"decision":"continue","patch":{"model_guidance":"Summaries must cite record ids."}}`},
		{"context section", BeforeModelRequest, `{"run_id":"r","phase_execution_id":"e","phase":{"phase_id":"p","phase_objective":"o","completion":{}},"sections":[]}`,
			"guidance", `{"decision":"continue","patch":{"context_sections":[{"title":"Policy","content":"Do not reveal credentials."}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := e.Evaluate(tc.hook, jsontext.Value(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if got := result(t, d); got != tc.result {
				t.Errorf("result\n got %s\nwant %s", got, tc.result)
			}
			wantCode := RuleMatched
			if tc.rule == "" {
				wantCode = DefaultApplied
			}
			if d.Reason.RuleID != tc.rule || d.Reason.Code != wantCode {
				t.Errorf("reason %+v, want rule %q", d.Reason, tc.rule)
			}
			if d.Patch != nil && d.Patch.hook() != tc.hook {
				t.Errorf("patch %T for %s", d.Patch, tc.hook)
			}
		})
	}
}

// The upstream fixture's hook inputs, evaluated: the result objects have
// the fixture's shape.
func TestKnowledgeHookFixture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "..", "shared", "fixtures", "agentpm", "harness", "knowledge", "knowledge_hooks.json"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("reference material missing in CI: %v", err)
		}
		t.Skipf("shared fixtures not available: %v", err)
	}
	var fx map[string]jsontext.Value
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	e := load(t)
	d, err := e.Evaluate(BeforeKnowledgeRequest, fx["before_knowledge_request"])
	if err != nil || result(t, d) != `{"decision":"continue","patch":{"top_k":3}}` {
		t.Fatalf("before_knowledge_request: %+v, %v", d, err)
	}
	// The fixture's own results are continue decisions with patches.
	for _, k := range []string{"before_knowledge_request_result", "after_knowledge_retrieval_result"} {
		var r struct {
			Decision Action         `json:"decision"`
			Patch    jsontext.Value `json:"patch"`
		}
		if err := json.Unmarshal(fx[k], &r); err != nil || r.Decision != Continue || r.Patch.Kind() != '{' {
			t.Fatalf("%s: %+v %v", k, r, err)
		}
	}
	d, err = e.Evaluate(AfterKnowledgeRetrieval, fx["after_knowledge_retrieval"])
	if err != nil || d.Action != Continue || d.Patch != nil || d.Reason.Code != DefaultApplied {
		t.Fatalf("after_knowledge_retrieval: %+v, %v", d, err)
	}
}

func TestDefaults(t *testing.T) {
	in := jsontext.Value(`{"phase_id":"p","tool":"t","arguments":{}}`)
	e, err := Parse([]byte(`{"rules":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Evaluate(BeforeToolCall, in); d.Action != Continue || d.Reason.Code != DefaultApplied || d.Reason.Message == "" {
		t.Fatalf("empty policy: %+v", d)
	}
	e, _ = Parse([]byte(`{"default":{"decision":"reject","reason":"closed by default"},"rules":[{"tools":["safe-*"],"decision":"continue"}]}`))
	if d, _ := e.Evaluate(BeforeToolCall, in); result(t, d) != `{"decision":"reject","reason":"closed by default"}` {
		t.Fatalf("default reject: %+v", d)
	}
	d, _ := e.Evaluate(BeforeToolCall, jsontext.Value(`{"phase_id":"p","tool":"safe-read","arguments":{}}`))
	if d.Action != Continue || d.Reason.RuleID != "rule-1" || d.Patch != nil {
		t.Fatalf("allow-list rule: %+v", d)
	}
	// A rule without conditions matches everything it applies to, and
	// first match wins.
	e, _ = Parse([]byte(`{"rules":[{"id":"a","hooks":["before_memory_read"],"decision":"reject"},{"id":"b","decision":"continue"},{"id":"c","decision":"reject"}]}`))
	if d, _ := e.Evaluate(BeforeMemoryRead, jsontext.Value(`{}`)); d.Reason.RuleID != "a" || d.Reason.Message != "rejected by policy rule a" {
		t.Fatalf("first rule: %+v", d)
	}
	if d, _ := e.Evaluate(BeforeMemoryWrite, jsontext.Value(`{}`)); d.Reason.RuleID != "b" || d.Action != Continue {
		t.Fatalf("second rule: %+v", d)
	}
}

func TestPolicyErrors(t *testing.T) {
	for _, tc := range []struct {
		policy string
		rule   int
		field  string
	}{
		{`{"rules":[],"extra":1}`, 0, ""},
		{`{"rules":[{"decision":"continue","tool":["x"]}]}`, 0, ""}, // misspelt member
		{`not json`, 0, ""},
		{`{"default":{"decision":"maybe"}}`, 0, "default.decision"},
		{`{"rules":[{"decision":"allow"}]}`, 1, "decision"},
		{`{"rules":[{}]}`, 1, "decision"},
		{`{"rules":[{"decision":"reject"},{"hooks":["after_tool_call"],"decision":"reject"}]}`, 2, "hooks"},
		{`{"rules":[{"patterns":["("],"decision":"reject"}]}`, 1, "patterns"},
		{`{"rules":[{"redact":["[z-a]"],"decision":"continue"}]}`, 1, "redact"},
		{`{"rules":[{"redact":["x"],"decision":"reject"}]}`, 1, "redact"},
		{`{"rules":[{"hooks":["before_tool_call"],"max_top_k":3,"decision":"continue"}]}`, 1, "max_top_k"},
		{`{"rules":[{"hooks":["before_model_request"],"remove_tools":["x"],"decision":"continue"}]}`, 1, "remove_tools"},
		{`{"rules":[{"id":"x","decision":"reject"},{"id":"x","decision":"reject"}]}`, 2, "id"},
		{`{"rules":[{"tools":[""],"decision":"reject"}]}`, 1, "glob"},
		{`{"rules":[{"fields":{"a":""},"decision":"reject"}]}`, 1, "fields"},
		{`{"rules":[{"context_sections":[{"title":"","content":"x"}],"decision":"continue"}]}`, 1, "context_sections"},
		{`{"rules":[{"provider_options":[1],"decision":"continue"}]}`, 1, "provider_options"},
		{`{"rules":[{"max_limit":-1,"decision":"continue"}]}`, 1, "max"},
	} {
		_, err := Parse([]byte(tc.policy))
		var pe *PolicyError
		if !errors.Is(err, ErrInvalidPolicy) || !errors.As(err, &pe) || pe.Rule != tc.rule || pe.Field != tc.field {
			t.Errorf("%s: %v (%+v)", tc.policy, err, pe)
		}
	}
	if _, err := Load("testdata/missing.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	e := load(t)
	if _, err := e.Evaluate("after_tool_call", jsontext.Value(`{}`)); !errors.Is(err, ErrUnknownHook) {
		t.Errorf("unknown hook: %v", err)
	}
	for _, in := range []string{``, `null`, `[]`, `"x"`, `{`} {
		if _, err := e.Evaluate(BeforeToolCall, jsontext.Value(in)); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("input %q: %v", in, err)
		}
	}
	if _, err := e.Evaluate(BeforeToolSelection, jsontext.Value(`{"candidates":[{"description":"no id"},{"canonical_id":"deploy.x"}]}`)); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("candidate without id: %v", err)
	}
}

func TestGlobs(t *testing.T) {
	for _, tc := range []struct {
		glob, s string
		want    bool
	}{
		{"*", "", true}, {"*", "a/b", true}, {"shell", "shell", true}, {"shell", "shells", false},
		{"*/exec-*", "@zack/exec-sh", true}, {"a?c", "abc", true}, {"a?c", "ac", false}, {"é*", "été", true},
		{"*a*b*", "xxaxxbxx", true}, {"*a*b", "ba", false},
	} {
		if got := wildcard(tc.glob, tc.s); got != tc.want {
			t.Errorf("wildcard(%q, %q) = %v", tc.glob, tc.s, got)
		}
	}
	for _, tc := range []struct {
		glob, p string
		want    bool
	}{
		{"**/.env", ".env", true}, {"**/.env", "a/b/.env", true}, {"**/.env", "/abs/.env", true}, {"**/.env", "a/.envrc", false},
		{"/etc/**", "/etc/passwd", true}, {"/etc/**", "/etc", true}, {"/etc/**", "/etcetera/x", false}, {"/etc/**", "etc/x", false},
		{"src/*.go", "src/a.go", true}, {"src/*.go", "src/x/a.go", false}, {"src/**/*.go", "src/x/y/a.go", true},
		{"a/**/b/**/c", "a/x/b/y/z/c", true}, {"[", "[", false},
	} {
		if got := pathGlob(tc.glob, cleanPath(tc.p)); got != tc.want {
			t.Errorf("pathGlob(%q, %q) = %v", tc.glob, tc.p, got)
		}
	}
}

func TestConcurrentEvaluate(t *testing.T) {
	e := load(t)
	in := jsontext.Value(`{"phase_id":"p","tool":"@zack/http","arguments":{"token":"sk-ABCDEFGH12"}}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				d, err := e.Evaluate(BeforeToolCall, in)
				if err != nil || d.Reason.RuleID != "hide-tokens" {
					t.Error(d, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzEvaluate(f *testing.F) {
	f.Add("before_tool_call", `{"tool":"shell","arguments":{"path":"/etc/x","t":"sk-AAAAAAAAAA"}}`)
	f.Add("after_knowledge_retrieval", `{"result":{"content":"api_key=1","results":[{"chunk_id":"c","text":"sk-BBBBBBBBBB"}]}}`)
	f.Add("before_tool_selection", `{"candidates":[{"canonical_id":"deploy.x"},7]}`)
	e, err := Load("testdata/policy.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, hook, input string) {
		d, err := e.Evaluate(HookID(hook), jsontext.Value(input))
		if err != nil {
			if !errors.Is(err, ErrUnknownHook) && !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		r, err := d.Result()
		if err != nil || !jsontext.Value(r).IsValid() {
			t.Fatalf("result %s: %v", r, err)
		}
		if d.Action == Reject && !strings.Contains(string(r), `"reason"`) {
			t.Fatalf("reject without reason: %s", r)
		}
	})
}

func BenchmarkEvaluate(b *testing.B) {
	e := load(b)
	in := jsontext.Value(`{"phase_id":"p","tool":"@zack/http","arguments":{"url":"https://example.test","headers":["x: y"],"body":"` + strings.Repeat("lorem ipsum ", 50) + `"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(BeforeToolCall, in); err != nil {
			b.Fatal(err)
		}
	}
}
