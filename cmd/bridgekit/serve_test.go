package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/clients/acpremote"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/remote"
)

// startServe runs `bridgekit serve ARGS` in process and returns its host:port; the serve ends with the
// test.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw}, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	addr := regexp.MustCompile(`ws://([0-9.:]+)/acp \(WebSocket\)`)
	var stderr strings.Builder
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if m := addr.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, pr)
			t.Cleanup(func() {
				cancel()
				select {
				case code := <-done:
					if code != 0 {
						t.Errorf("serve exited %d", code)
					}
				case <-time.After(30 * time.Second):
					t.Error("serve did not stop")
				}
			})
			if !strings.Contains(stderr.String(), "warning: serving without TLS") {
				t.Errorf("no warning about clear text: %s", stderr.String())
			}
			return m[1]
		}
	}
	cancel()
	t.Fatalf("serve did not start: %s (exit %d)", stderr.String(), <-done)
	return ""
}

func TestServeRefusesAnOpenAddressWithoutToken(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), &Env{Stdout: io.Discard, Stderr: &stderr}, []string{"serve", "--listen", "0.0.0.0:0", "--", "true"}); code != 2 || !strings.Contains(stderr.String(), "--token-file") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// An agent program behind serve: a turn over each transport, with a token, the draft cursor on (the
// typed engine reads messages that carry _meta["acp/cursor"]); the traffic recorded as trace records,
// one session per connection; nothing without the token.
func TestServe(t *testing.T) {
	agentBin, _, _ := testBins(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("# a comment\nsecret-one\n"), 0o600)
	out := filepath.Join(dir, "trace.jsonl")
	addr := startServe(t, "--token-file", tokens, "--out", out, "--draft-cursor", "--", agentBin)
	if resp, err := http.Post("http://"+addr+"/acp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)); err != nil || resp.StatusCode != 401 {
		t.Fatalf("without a token: %v %v", resp, err)
	}
	for _, url := range []string{"ws://" + addr + "/acp", "http://" + addr + "/acp"} {
		ctx := context.Background()
		var text strings.Builder
		agent, err := acpremote.DialAgent(ctx, url, &acp.ClientHandlers{SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
				text.WriteString(c.Content.Text.Text)
			}
			return nil
		}}, &acpremote.Options{Dial: remote.DialOptions{Token: "secret-one"}})
		if err != nil {
			t.Fatal(err)
		}
		agent.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
		s, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: dir, MCPServers: []acp.MCPServer{}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("over the network")}})
		agent.Close()
		if err != nil || res.StopReason != acp.StopReasonEndTurn || text.String() != "You said: over the network " {
			t.Fatalf("%s: %v %v %q", url, res, err, text.String())
		}
	}
	// Both connections are recorded as trace records, the token in none of them. The agents end with
	// their connections; the records end then.
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(out)
		if strings.Count(string(data), `"type":"end"`) == 2 {
			if strings.Count(string(data), `"type":"session"`) != 2 || strings.Contains(string(data), "secret-one") || !strings.Contains(string(data), `"method":"session/prompt"`) {
				t.Fatalf("records:\n%s", data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connections' records did not end:\n%s", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The user's case: examples/acp-client over WebSocket, killed mid-turn; a new client resumes the session
// and gets the whole turn, to its end.
func TestServeKillClientMidTurnAndResume(t *testing.T) {
	agentBin, clientBin, _ := testBins(t)
	addr := startServe(t, "--", agentBin)
	url := "ws://" + addr + "/acp"
	c1 := exec.Command(clientBin, "-url", url, "-prompt", "wait 40")
	stdout, _ := c1.StdoutPipe()
	stderr, _ := c1.StderrPipe()
	if err := c1.Start(); err != nil {
		t.Fatal(err)
	}
	errs := bufio.NewScanner(stderr)
	var session, connection string
	for errs.Scan() {
		if m := regexp.MustCompile(`session (\S+) on connection (\S+)`).FindStringSubmatch(errs.Text()); m != nil {
			session, connection = m[1], m[2]
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	// Kill it once it has printed a few ticks.
	buf := make([]byte, 64)
	seen := ""
	for !strings.Contains(seen, "tick 3 ") {
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("client output %q: %v", seen, err)
		}
		seen += string(buf[:n])
	}
	c1.Process.Kill()
	c1.Wait()
	c2 := exec.Command(clientBin, "-url", url, "-resume", session, "-connection", connection)
	var out2, err2 bytes.Buffer
	c2.Stdout, c2.Stderr = &out2, &err2
	if err := c2.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, err2.String())
	}
	var want strings.Builder
	for i := 0; i < 40; i++ {
		want.WriteString("tick " + strconv.Itoa(i) + " ")
	}
	if strings.TrimSpace(out2.String()) != strings.TrimSpace(want.String()) || !strings.Contains(err2.String(), "stop reason end_turn (resumed)") {
		t.Fatalf("resumed client printed %q\n%s", out2.String(), err2.String())
	}
}
