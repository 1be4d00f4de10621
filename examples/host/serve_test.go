package main

import (
	"bufio"
	"fmt"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/harn"
)

// Serving its stdin/stdout, the host answers the configured Harn methods,
// the ACP client methods by its policy, and renders session/update, all on
// one connection; what it does not serve is still -32601.
func TestServeConfiguredMethodsOverPipes(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "src", "main.go"), "package main\n")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := start(t, exec.Command(hostBin, "-config", "example/host.json", "-policy", "example/policy.json", "-workspace", ws), pw)
	pw.Close()
	out := bufio.NewReader(pr)
	call := func(id int, method, params string) (result jsontext.Value, code int64) {
		t.Helper()
		if _, err := fmt.Fprintf(r.stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: %v; stderr:\n%s", method, err, r.stderrText())
		}
		var reply struct {
			ID     int            `json:"id"`
			Result jsontext.Value `json:"result"`
			Error  *struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &reply); err != nil || reply.ID != id {
			t.Fatalf("%s: reply %s: %v", method, line, err)
		}
		if reply.Error != nil {
			return nil, reply.Error.Code
		}
		return reply.Result, 0
	}
	notify := func(method, params string) {
		if _, err := fmt.Fprintf(r.stdin, `{"jsonrpc":"2.0","method":%q,"params":%s}`+"\n", method, params); err != nil {
			t.Fatal(err)
		}
	}

	res, _ := call(1, "host/tools/list", `{}`)
	var tools harn.HostToolsListResult
	if json.Unmarshal(res, &tools) != nil || tools.Object == nil || tools.Object.ToolsList == nil || len(tools.Object.ToolsList.Tools) != 3 {
		t.Errorf("host/tools/list: %s", res)
	}
	if _, code := call(15, "skills/list", `null`); code != -32602 {
		t.Errorf("skills/list with null params (Harn sends {}): code %d", code)
	}
	res, _ = call(2, "skills/list", `{}`)
	if !strings.Contains(string(res), `{"id":"review","name":"review","description":"Review existing code for correctness","source":"host"}`) {
		t.Errorf("skills/list: %s", res)
	}
	res, _ = call(3, "skills/fetch", `{"id":"ship"}`)
	if !strings.Contains(string(res), `"manifest":{"when_to_use":"User says ship, release or deploy","allowed_tools":["bash","git"],"paths":["infra/**","Dockerfile"],"model":"claude-opus-4-7"}`) {
		t.Errorf("skills/fetch: %s", res)
	}
	if _, code := call(4, "skills/fetch", `{"id":7}`); code != -32602 {
		t.Errorf("skills/fetch with a bad id: code %d", code)
	}
	res, _ = call(5, "skill/match", `{"strategy":"host","prompt":"review my code","working_files":[],"candidates":[{"name":"review","description":"Review code","when_to_use":"","paths":[]},{"name":"ship","description":"","when_to_use":"","paths":[]}]}`)
	if !strings.HasPrefix(string(res), `{"matches":[{"name":"review","score":`) || strings.Contains(string(res), `"ship"`) {
		t.Errorf("skill/match: %s", res)
	}
	permission := `{"sessionId":"s","toolCall":{"toolCallId":"t","title":"edit_file","kind":"edit","rawInput":{"path":%q}},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`
	res, _ = call(6, "session/request_permission", fmt.Sprintf(permission, "src/main.go"))
	if string(res) != `{"outcome":{"outcome":"selected","optionId":"allow"}}` {
		t.Errorf("allowed edit: %s", res)
	}
	res, _ = call(7, "session/request_permission", fmt.Sprintf(permission, "go.mod"))
	if string(res) != `{"outcome":{"outcome":"selected","optionId":"reject"},"reason":"no rule allows it"}` {
		t.Errorf("denied edit: %s", res)
	}
	res, _ = call(8, "fs/read_text_file", fmt.Sprintf(`{"sessionId":"s","path":%q}`, filepath.Join(ws, "src", "main.go")))
	if string(res) != `{"content":"package main\n"}` {
		t.Errorf("fs/read_text_file: %s", res)
	}
	notify("session/update", `{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"step","priority":"high","status":"pending"}]}}`)
	notify("session/update", `{"sessionId":"s","update":{"sessionUpdate":"worker_update","_meta":{"harn":{"workerId":"w1","workerName":"review_captain","workerTask":"Review PR #42","event":"WorkerSpawned","status":"running"}}}}`)
	if _, code := call(9, "session/nope", `{}`); code != -32601 {
		t.Errorf("unknown method: code %d", code)
	}
	// builtin_call runs a configured tool with its builtin; other names are
	// rejected (-32001), and a host tool takes one argument.
	res, _ = call(10, "builtin_call", `{"name":"Read","args":[{"path":"src/main.go"}]}`)
	if string(res) != `{"path":"src/main.go","content":"package main\n"}` {
		t.Errorf("builtin_call Read: %s", res)
	}
	if _, code := call(11, "builtin_call", `{"name":"hostlib_fs_read","args":[{"path":"src/main.go"}]}`); code != files.CodeDenied {
		t.Errorf("builtin_call of a name the host does not offer: code %d", code)
	}
	if _, code := call(12, "builtin_call", `{"name":"Read","args":[{"path":"src/main.go"},2]}`); code != -32602 {
		t.Errorf("builtin_call with two arguments: code %d", code)
	}
	res, _ = call(13, "builtin_call", `{"name":"status","args":[{}]}`)
	if !strings.Contains(string(res), `"tools":["Read","open_file","status"]`) || !strings.Contains(string(res), `"skills":["docs","review","ship"]`) {
		t.Errorf("builtin_call status: %s", res)
	}
	// The runtime's own notifications are rendered.
	notify("progress", `{"phase":"worker","message":"spawned review_captain","progress":1,"total":2}`)
	notify("log", `{"level":"warn","message":"slow provider"}`)
	notify("output", `{"text":"hello from the script"}`)
	notify("agent/idle", `{"iteration":3,"backoff_ms":1000}`)
	notify("_harn/agentEvent", `{"sessionId":"s","kind":"iteration_start","iteration":2}`)
	if _, code := call(14, "skills/list", `{}`); code != 0 { // a round trip after the notifications
		t.Errorf("skills/list: code %d", code)
	}
	r.stdin.Close()
	if got := r.wait(t, 10*time.Second); got != 0 {
		t.Fatalf("exit status %d", got)
	}
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Errorf("unexpected output: %s", rest)
	}
	text := r.stderrText()
	for _, want := range []string{
		`permission "edit_file" (edit) src/main.go: allowed (rule edit-src) -> option "allow"`,
		`permission "edit_file" (edit) go.mod: denied (no rule allows it) -> option "reject"`,
		"plan:\n  [ ] step (high)\n",
		`harn worker_update: review_captain (w1) WorkerSpawned -> running "Review PR #42"`,
		"skill/match: review ",
		"fs read src/main.go: allowed (fs.read)",
		"builtin Read (read_file): done",
		"builtin hostlib_fs_read: rejected (not a tool of this host)",
		"bridge progress: worker: spawned review_captain (1/2)",
		"bridge log: [warn] slow provider",
		"output: hello from the script",
		"idle: iteration 3, backoff 1000ms",
		"event iteration_start: iteration=2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("stderr lacks %q:\n%s", want, text)
		}
	}
}

// Without a configuration the host serves no tools and no skills: those
// methods are answered -32601, and host/capabilities lists only what is
// served.
func TestServeUnconfiguredMethodsAreNotServed(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := start(t, exec.Command(hostBin, "-workspace", t.TempDir()), pw)
	pw.Close()
	out := bufio.NewReader(pr)
	for id, req := range []string{
		`"method":"host/tools/list","params":{}`,
		`"method":"builtin_call","params":{"name":"Read","args":[{}]}`,
		`"method":"skills/list","params":{}`,
		`"method":"skills/fetch","params":{"id":"ship"}`,
		`"method":"skill/match","params":{"strategy":"host","prompt":"p","working_files":[],"candidates":[]}`,
	} {
		if _, err := fmt.Fprintf(r.stdin, `{"jsonrpc":"2.0","id":%d,%s}`+"\n", id, req); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadBytes('\n')
		if err != nil || !strings.Contains(string(line), `"code":-32601`) {
			t.Errorf("%s: %s %v", req, line, err)
		}
	}
	if _, err := fmt.Fprintf(r.stdin, `{"jsonrpc":"2.0","id":9,"method":"host/capabilities","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadBytes('\n')
	var reply struct {
		Result map[string]jsontext.Value `json:"result"`
	}
	if err != nil || json.Unmarshal(line, &reply) != nil || len(reply.Result) != 1 || reply.Result["process"] == nil {
		t.Errorf("host/capabilities: %s %v", line, err)
	}
	r.stdin.Close()
	if got := r.wait(t, 10*time.Second); got != 0 {
		t.Fatalf("exit status %d", got)
	}
}
