package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/bridgekit/bridgekit/clients/harnvm"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/internal/proctest"
)

// upstreamSchema is Harn's own shell-discovery schema: every success result
// must validate against it.
const upstreamSchema = "../../../shared/fixtures/harn/upstream/spec/schemas/host-shell-discovery.schema.json"

// hostBin is the example host, built once by TestMain.
var hostBin string

func TestMain(m *testing.M) {
	proctest.RunRole() // the red team's attacker (containment_test.go)
	switch {
	case os.Getenv(floodEnv) != "":
		os.Exit(floodRuntime())
	case os.Getenv(forgeEnv) != "":
		os.Exit(forgeRuntime())
	}
	if scenario := os.Getenv(fakeAgentEnv); scenario != "" {
		os.Exit(fakeAgent(scenario))
	}
	dir, err := os.MkdirTemp("", "bridgekit-host")
	if err != nil {
		panic(err)
	}
	hostBin = filepath.Join(dir, "host")
	out, err := exec.Command("go", "build", "-o", hostBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	// No goroutine of the renderer, a terminal or a test peer outlives the tests.
	if err := goleak.Find(proctest.IgnoreSpawner()); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

func buildHost(t *testing.T) string { return hostBin }

func compileDefs(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for _, def := range []string{"shell", "list_shells_response", "shell_invocation_response"} {
		s, err := c.Compile(upstreamSchema + "#/$defs/" + def)
		if err != nil {
			t.Fatalf("compile upstream schema: %v", err)
		}
		out[def] = s
	}
	return out
}

// rawPeer writes lines to the child's stdin and collects its stdout lines.
type rawPeer struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan []byte
	cmd    *exec.Cmd
	killed bool // the test killed the host: its cleanup expects no clean exit
}

func startRaw(t *testing.T, bin string, args ...string) *rawPeer {
	t.Helper()
	return startRawEnv(t, nil, bin, args...)
}

// startRawEnv is startRaw with variables added to the host's environment.
func startRawEnv(t *testing.T, env []string, bin string, args ...string) *rawPeer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{t: t, stdin: stdin, lines: make(chan []byte, 64), cmd: cmd}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.lines <- bytes.Clone(sc.Bytes())
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil && !p.killed {
				t.Errorf("host exited with %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("host did not exit after stdin closed")
		}
	})
	return p
}

func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// next reads the next response line.
func (p *rawPeer) next() response {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("host closed stdout")
		}
		var r response
		if err := json.Unmarshal(line, &r); err != nil {
			p.t.Fatalf("host wrote a line that is not JSON: %q", line)
		}
		return r
	case <-time.After(10 * time.Second):
		p.t.Fatal("no response within 10s")
	}
	return response{}
}

// call sends one request and returns its response (requests are sent one at a time).
func (p *rawPeer) call(id, method, params string) response {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
	r := p.next()
	if string(r.ID) != id {
		p.t.Fatalf("response id %s, want %s byte for byte", r.ID, id)
	}
	return r
}

func validate(t *testing.T, s *jsonschema.Schema, raw json.RawMessage) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("result does not validate against Harn's schema: %v\n%s", err, raw)
	}
}

func TestHostOverRealPipes(t *testing.T) {
	schemas := compileDefs(t)
	bin := buildHost(t)
	p := startRaw(t, bin, "-max-frame", "65536")

	// host/capabilities lists exactly the four process operations.
	r := p.call("1", "host/capabilities", `{"sessionId":"s1"}`)
	if r.Error != nil {
		t.Fatalf("host/capabilities: %+v", r.Error)
	}
	var caps map[string][]string
	if err := json.Unmarshal(r.Result, &caps); err != nil || strings.Join(caps["process"], ",") != "list_shells,get_default_shell,set_default_shell,shell_invocation" || len(caps) != 1 {
		t.Fatalf("capabilities %s", r.Result)
	}

	r = p.call(`"list-1"`, "host/call", `{"sessionId":"s1","name":"process.list_shells","args":{}}`)
	if r.Error != nil {
		t.Fatalf("list_shells: %+v", r.Error)
	}
	validate(t, schemas["list_shells_response"], r.Result)
	var list struct {
		Shells []struct {
			ID        string `json:"id"`
			Available bool   `json:"available"`
		} `json:"shells"`
		Default *string `json:"default_shell_id"`
	}
	_ = json.Unmarshal(r.Result, &list)
	if list.Default == nil {
		t.Skip("no shell on this machine")
	}

	r = p.call("3", "host/call", `{"sessionId":"s1","name":"process.get_default_shell","args":{}}`)
	validate(t, schemas["shell"], r.Result)

	// Select the last available shell for s1 only.
	chosen := ""
	for _, s := range list.Shells {
		if s.Available {
			chosen = s.ID
		}
	}
	r = p.call("4", "host/call", fmt.Sprintf(`{"sessionId":"s1","name":"process.set_default_shell","args":{"shell_id":%q}}`, chosen))
	validate(t, schemas["shell"], r.Result)
	r = p.call("5", "host/call", `{"sessionId":"s1","name":"process.get_default_shell","args":{}}`)
	if !bytes.Contains(r.Result, []byte(fmt.Sprintf(`"id":%q`, chosen))) {
		t.Fatalf("default for s1 is not %s: %s", chosen, r.Result)
	}
	r = p.call("6", "host/call", `{"sessionId":"s2","name":"process.get_default_shell","args":{}}`)
	if !bytes.Contains(r.Result, []byte(fmt.Sprintf(`"id":%q`, *list.Default))) {
		t.Fatalf("session s2 lost its own default: %s", r.Result)
	}

	// shell_invocation builds an argv that really runs on this machine.
	r = p.call("7", "host/call", `{"sessionId":"s2","name":"process.shell_invocation","args":{"command":"printf '%s|%s' ok \"two words\"","login":false}}`)
	if r.Error != nil {
		t.Fatalf("shell_invocation: %+v", r.Error)
	}
	validate(t, schemas["shell_invocation_response"], r.Result)
	var inv harn.ShellInvocationResponse
	if err := json.Unmarshal(r.Result, &inv); err != nil {
		t.Fatal(err)
	}
	if inv.Args[inv.CommandArgIndex] != `printf '%s|%s' ok "two words"` {
		t.Fatalf("command is not one argument at command_arg_index: %q", inv.Args)
	}
	out, err := exec.Command(inv.Program, inv.Args...).Output()
	if err != nil || string(out) != "ok|two words" {
		t.Fatalf("running the invocation: %q, %v", out, err)
	}

	// Errors: unknown method, unknown shell id, unknown operation, invalid args.
	r = p.call("8", "session/nope", `{}`)
	if r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("unknown method: %+v", r)
	}
	r = p.call("9", "host/call", `{"name":"process.shell_invocation","args":{"shell_id":"no-such-shell","command":"true"}}`)
	if r.Error == nil || r.Error.Code != -32602 || !bytes.Contains(r.Error.Data, []byte(`"no-such-shell"`)) {
		t.Fatalf("unknown shell id: %+v", r.Error)
	}
	r = p.call("10", "host/call", `{"name":"process.exec","args":{}}`)
	if r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("unknown operation: %+v", r.Error)
	}
	r = p.call("11", "host/call", `{"name":"process.shell_invocation","args":{"command":"true","bogus":1}}`)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("closed args with an unknown member: %+v", r.Error)
	}

	// A malformed line and an oversized line are answered and skipped.
	p.send(`{"jsonrpc":"2.0","id":12,"method":`)
	if r = p.next(); r.Error == nil || r.Error.Code != -32700 || string(r.ID) != "null" {
		t.Fatalf("malformed line: %+v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":13,"method":"host/call","params":{"name":"process.list_shells","args":{"pad":"` + strings.Repeat("x", 100_000) + `"}}}`)
	if r = p.next(); r.Error == nil || r.Error.Code != -32600 || string(r.ID) != "13" {
		t.Fatalf("oversized line: %+v", r) // answered under the id its start shows
	}

	// The connection survived both.
	r = p.call("14", "host/call", `{"name":"process.list_shells","args":{}}`)
	validate(t, schemas["list_shells_response"], r.Result)
}

func TestTypedClientAgainstHostProcess(t *testing.T) {
	bin := buildHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := harnvm.Start(ctx, exec.Command(bin), nil)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := c.Supports(ctx, "process", "shell_invocation")
	if err != nil || !ok {
		t.Fatalf("Supports: %v %v", ok, err)
	}
	if ok, _ := c.Supports(ctx, "hypothesis", "attest_event"); ok {
		t.Fatal("the example host must not advertise hypothesis.attest_event")
	}
	list, err := c.ProcessListShells(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list.DefaultShellID == nil {
		t.Skip("no shell on this machine")
	}
	session := "typed"
	inv, err := c.ProcessShellInvocation(ctx, &harn.HostCallParams{SessionID: &session}, &harn.ShellInvocationRequest{ShellID: list.DefaultShellID, Command: ptr("echo typed")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(inv.Program, inv.Args...).Output()
	if err != nil || strings.TrimSpace(string(out)) != "typed" {
		t.Fatalf("%q %v", out, err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("host exit: %v", err)
	}
}

func TestChildTopology(t *testing.T) {
	// host -- COMMAND: the child (a shell script standing in for `harn serve acp`)
	// asks for capabilities over its stdout and prints the answer on stderr,
	// which the host passes through.
	bin := buildHost(t)
	script := `printf '%s\n' '{"jsonrpc":"2.0","id":7,"method":"host/call","params":{"name":"process.get_default_shell","args":{}}}'; read -r line; echo "child got: $line" >&2`
	cmd := exec.Command(bin, "--", "/bin/sh", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = os.Stdout
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("host: %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("host did not exit with its child")
	}
	if !strings.Contains(stderr.String(), `child got: {"jsonrpc":"2.0","id":7,"result":{"id":`) {
		t.Fatalf("child did not receive the bridge answer; stderr:\n%s", stderr.String())
	}
}

func ptr[T any](v T) *T { return &v }

// A Harn runtime runs a command through the host over real pipes, request
// for request as `harn serve acp` does (acp/builtins.rs acp_terminal_exec):
// host/capabilities, process.get_default_shell, then terminal/create
// {sessionId, command, shell} with that shell, terminal/wait_for_exit
// (whose stdout, stderr, combined, exitCode and success it reads),
// terminal/output and terminal/release.
func TestHarnTerminalOverRealPipes(t *testing.T) {
	ws := t.TempDir()
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.json"),
		`{"terminal": {"allow": ["echo a && echo b >&2", "echo **"]}}`)
	p := startRaw(t, buildHost(t), "-policy", pol, "-workspace", ws)

	r := p.call("1", "host/capabilities", `{"sessionId":"sess-1"}`)
	if r.Error != nil || !bytes.Contains(r.Result, []byte(`"get_default_shell"`)) {
		t.Fatalf("host/capabilities: %s %+v", r.Result, r.Error)
	}
	r = p.call("2", "host/call", `{"sessionId":"sess-1","name":"process.get_default_shell","args":{}}`)
	if r.Error != nil {
		if os.Getenv("CI") == "" && r.Error.Code == -32000 {
			t.Skip("no shell on this machine")
		}
		t.Fatalf("get_default_shell: %+v", r.Error)
	}
	shell := string(r.Result) // passed on verbatim, as Harn does

	r = p.call("3", "terminal/create", `{"sessionId":"sess-1","command":"echo a && echo b >&2","shell":`+shell+`}`)
	if r.Error != nil {
		t.Fatalf("terminal/create: %+v", r.Error)
	}
	var created struct {
		TerminalID string `json:"terminalId"`
	}
	if err := json.Unmarshal(r.Result, &created); err != nil || created.TerminalID == "" {
		t.Fatalf("terminal/create: %s", r.Result)
	}
	ids := fmt.Sprintf(`{"sessionId":"sess-1","terminalId":%q}`, created.TerminalID)
	r = p.call("4", "terminal/wait_for_exit", ids)
	var exit struct {
		Stdout   *string `json:"stdout"`
		Stderr   *string `json:"stderr"`
		Combined *string `json:"combined"`
		ExitCode *int    `json:"exitCode"`
		Success  *bool   `json:"success"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &exit) != nil || exit.Stdout == nil || *exit.Stdout != "a\n" ||
		exit.Stderr == nil || *exit.Stderr != "b\n" || exit.Combined == nil || len(*exit.Combined) != 4 ||
		exit.ExitCode == nil || *exit.ExitCode != 0 || exit.Success == nil || !*exit.Success {
		t.Fatalf("terminal/wait_for_exit: %s %+v", r.Result, r.Error)
	}
	var acpExit acp.WaitForTerminalExitResponse
	if err := acpExit.UnmarshalJSON(r.Result); err != nil {
		t.Fatalf("not an ACP WaitForTerminalExitResponse: %v", err)
	}
	r = p.call("5", "terminal/output", ids)
	if r.Error != nil || !bytes.Contains(r.Result, []byte(`"exitStatus":{"exitCode":0}`)) {
		t.Fatalf("terminal/output: %s %+v", r.Result, r.Error)
	}
	if r = p.call("6", "terminal/release", ids); r.Error != nil {
		t.Fatalf("terminal/release: %+v", r.Error)
	}

	// A line that starts with allowed words but runs more is refused, and
	// so is a shell this host does not offer.
	r = p.call("7", "terminal/create", `{"sessionId":"sess-1","command":"echo hi; touch pwned","shell":`+shell+`}`)
	if r.Error == nil || r.Error.Code != files.CodeDenied {
		t.Fatalf("echo hi; touch pwned: %s %+v", r.Result, r.Error)
	}
	var other map[string]any
	if err := json.Unmarshal([]byte(shell), &other); err != nil {
		t.Fatal(err)
	}
	other["path"] = filepath.Join(ws, "evil")
	data, _ := json.Marshal(other)
	r = p.call("8", "terminal/create", `{"sessionId":"sess-1","command":"echo hi","shell":`+string(data)+`}`)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("a shell path the host does not offer: %s %+v", r.Result, r.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Fatal("a refused command ran")
	}
}
