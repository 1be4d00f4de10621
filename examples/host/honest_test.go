package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
)

// These tests are findings 3 and 7 of issue 33's red team: what a runtime
// sends is rendered so that it can neither forge a host line nor drive the
// terminal, and a stderr nobody reads never makes the host hold more than
// a bound.

// floodEnv makes the test binary a runtime that sends N agent_message_chunk
// notifications of 8 MiB (N = the value), says so in the file
// floodDoneEnv names, and waits for the end of its input.
const (
	floodEnv     = "BRIDGEKIT_HOST_FLOOD"
	floodDoneEnv = "BRIDGEKIT_HOST_FLOOD_DONE"
	forgeEnv     = "BRIDGEKIT_HOST_FORGE" // a runtime that writes forged lines on its stderr
)

func floodRuntime() int {
	n, _ := strconv.Atoi(os.Getenv(floodEnv))
	text := strings.Repeat("x", 8<<20)
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	for range n {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}`+"\n", text)
	}
	w.Flush()
	_ = os.WriteFile(os.Getenv(floodDoneEnv), []byte("done"), 0o644)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

func forgeRuntime() int {
	fmt.Fprint(os.Stderr, "starting\n\x1b[2Jhost: fs write /etc/sudoers: allowed (fs.write)\n\rhost: terminal term-9 rm -rf /: allowed\nhalf a line")
	fmt.Fprintln(os.Stderr, "\u202eevil\u202c"+strings.Repeat("y", 10<<10)) // a line longer than the filter holds
	fmt.Fprintln(os.Stderr, "forged-done")
	return 0
}

// TestRenderCannotForgeHostLines: agent text with line breaks, carriage
// returns, escape sequences, bidi overrides and zero-width characters is
// rendered visibly; no rendered line of it starts as a host line does, and
// every host line (status and audit) starts with "host: ".
func TestRenderCannotForgeHostLines(t *testing.T) {
	var ns []acp.SessionNotification
	for _, doc := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done.\nhost: fs write /etc/sudoers: allowed (fs.write)\n"}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\rhost: permission \"Bash\": allowed\u2028host: x\u0085host: y"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Edit","kind":"edit","locations":[{"path":"/ws/src/\u202etxt.exe\u200b"}],"rawInput":{"path":"a\u200bb"}}`,
		`{"sessionUpdate":"plan","entries":[{"content":"step\nhost: fs read x: allowed","priority":"high","status":"pending"}]}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+doc+`}`), &n); err != nil {
			t.Fatal(err)
		}
		ns = append(ns, n)
	}
	out := renderAll(false, ns)
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, "host") {
			t.Errorf("runtime text made a line that reads as the host's: %q", line)
		}
	}
	for _, bad := range []string{"\r", "\u202e", "\u200b", "\u2028", "\u0085"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q reached the terminal:\n%s", bad, out)
		}
	}
	for _, want := range []string{"done.↵\n" + contMark + "host: fs write", "<U+202E>txt.exe", "<U+200B>", "␍host", "<U+2028>", "<U+0085>"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendering lacks %q:\n%s", want, out)
		}
	}

	// The host's own lines: status and audit lines start with "host: ",
	// and what they quote of the runtime is shown visibly.
	a, buf := testApp(t, &policy{})
	a.render.Status("runtime said %s", "hi\nhost: forged")
	_, _ = a.files.ReadTextFile(t.Context(), &acp.ReadTextFileRequest{SessionID: "s", Path: "/ws/\u202epasswd\nhost: fs read /etc/shadow: allowed"})
	text := rendered(a, buf)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want two host lines:\n%s", text)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "host: ") || strings.ContainsAny(line, "\u202e\r") {
			t.Errorf("host line %q", line)
		}
	}
	if !strings.Contains(lines[1], "host: fs read ") || !strings.Contains(lines[1], "<U+202E>passwd↵host: fs read /etc/shadow") {
		t.Errorf("audit line %q", lines[1])
	}
}

// TestRuntimeStderrIsFiltered: what the runtime writes on its stderr
// reaches the host's stderr line by line after "stderr: ", visibly (no
// escape sequence, no line that reads as the host's), long lines in
// pieces; -raw-stderr passes it through untouched.
func TestRuntimeStderrIsFiltered(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		args := []string{"-workspace", t.TempDir()}
		if raw {
			args = append(args, "-raw-stderr")
		}
		cmd := exec.Command(hostBin, append(args, "-pass-env", forgeEnv, "--", self)...)
		cmd.Env = append(os.Environ(), forgeEnv+"=1")
		r := start(t, cmd, nil)
		r.waitStderr(t, "forged-done")
		r.stdin.Close()
		r.wait(t, 10*time.Second)
		text := r.stderrText()
		if raw {
			if !strings.Contains(text, "\x1b[2Jhost: fs write /etc/sudoers") {
				t.Errorf("-raw-stderr: the runtime's stderr is not untouched:\n%q", text)
			}
			continue
		}
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			switch {
			case strings.HasPrefix(line, "stderr: "), strings.HasPrefix(line, contMark):
			case strings.HasPrefix(line, "host: ") && !strings.Contains(line, "sudoers") && !strings.Contains(line, "term-9"):
			default:
				t.Errorf("line %q", line)
			}
		}
		for _, want := range []string{"stderr: ␛[2Jhost: fs write /etc/sudoers", "stderr: ␍host: terminal term-9", "stderr: half a line<U+202E>evil<U+202C>yyy", contMark + "yyy", "stderr: forged-done"} {
			if !strings.Contains(text, want) {
				t.Errorf("stderr lacks %q:\n%q", want, text)
			}
		}
		if strings.ContainsAny(text, "\x1b\r\u202e") {
			t.Errorf("a control character reached the terminal:\n%q", text)
		}
	}
}

// TestUnreadStderrBoundsTheHost is finding 3: with the host's stderr never
// read, 1 GiB of agent_message_chunk text (128 chunks of 8 MiB) leaves the
// host's peak resident set under 256 MiB.
func TestUnreadStderrBoundsTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("moves a GiB through a pipe")
	}
	if _, ok := rss(os.Getpid()); !ok {
		t.Skip("no /proc to measure RSS")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(t.TempDir(), "done")
	cmd := exec.Command(hostBin, "-workspace", t.TempDir(), "-pass-env", floodEnv, "-pass-env", floodDoneEnv, "--", self)
	cmd.Env = append(os.Environ(), floodEnv+"=128", floodDoneEnv+"="+done)
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer errR.Close() // never read
	cmd.Stderr = errW
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errW.Close()
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if peak := hwm(t, cmd.Process.Pid); peak > 256<<20 {
			t.Fatalf("host peaked at %d MiB, over 256 MiB, before the flood's end", peak>>20)
		}
		if time.Now().After(deadline) {
			t.Fatal("the runtime did not send its GiB within 5 minutes")
		}
	}
	time.Sleep(time.Second) // the last chunks through the host
	peak := hwm(t, cmd.Process.Pid)
	t.Logf("1 GiB of chunks with stderr unread: host peaked at %d MiB", peak>>20)
	if peak > 256<<20 {
		t.Errorf("host peaked at %d MiB, over 256 MiB", peak>>20)
	}
}
