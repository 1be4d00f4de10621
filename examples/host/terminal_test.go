package main

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	hostpolicy "github.com/bridgekit/bridgekit/servers/host/policy"
)

// The terminal/* handlers are servers/host/acpterm's, tested there; what
// the example adds is the policy file's terminal lists and the audit line
// it renders for every terminal/create.

func terminalPolicy(allow ...string) *policy {
	p := &policy{}
	p.Terminal.Env.Allow = []string{"GREETING"}
	for _, a := range allow {
		p.Terminal.Allow = append(p.Terminal.Allow, hostpolicy.Command{Pattern: a})
	}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return p
}

// create serves terminal/create params as the connection decodes them.
func create(ctx context.Context, t *testing.T, a *app, params string) error {
	t.Helper()
	var p acp.CreateTerminalRequest
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatalf("%s: %v", params, err)
	}
	_, err := a.term.Create(ctx, &p)
	return err
}

// Every terminal/create, allowed or denied, with or without Harn's shell,
// is rendered with its id, shell, line, the rule that decided it and the
// environment it got.
func TestTerminalRendering(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX commands")
	}
	a, out := testApp(t, terminalPolicy("sh -c *", "echo a && echo b", "echo **"))
	defer a.terms.Close(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var sh string
	for _, s := range a.shells.Shells() {
		if s.ID == testShellID {
			data, err := wire.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			sh = string(data)
		}
	}
	if sh == "" {
		t.Fatal("the configured test shell is not listed")
	}
	for _, c := range []struct {
		params  string
		allowed bool
	}{
		{`{"sessionId":"s","command":"sh","args":["-c","echo $GREETING"],"env":[{"name":"GREETING","value":"hi"}]}`, true},
		{`{"sessionId":"s","command":"rm","args":["-rf","x"]}`, false},
		{`{"sessionId":"s","command":"echo a && echo b","shell":` + sh + `}`, true},
		{`{"sessionId":"s","command":"echo hello   world","shell":` + sh + `}`, true},
		{`{"sessionId":"s","command":"go test x; touch pwned","shell":` + sh + `}`, false},
	} {
		if err := create(ctx, t, a, c.params); (err == nil) != c.allowed {
			t.Fatalf("%s: %v", c.params, err)
		}
	}
	a.terms.Close(5 * time.Second)
	text := rendered(a, out)
	for _, want := range []string{
		"terminal term-1 sh -c echo $GREETING: allowed (terminal.allow sh -c *) env: GREETING=hi",
		"terminal rm -rf x: denied (terminal.allow does not list it)",
		"terminal term-2 [test-sh] echo a && echo b: allowed (terminal.allow echo a && echo b (exactly))",
		"[test-sh] echo hello   world: allowed (terminal.allow echo **)",
		"terminal [test-sh] go test x; touch pwned: denied (terminal.allow does not list it; a shell command line with shell syntax",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendering lacks %q:\n%s", want, text)
		}
	}
}
