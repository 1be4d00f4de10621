package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/bridgekit/bridgekit/internal/proctest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests attack the host as a hostile runtime would (issue 14, "what
// is wrong"), over its real stdin and stdout, with a policy that allows
// only what each names. Each one failed on the host before it was rebuilt
// on servers/host/workspace and servers/host/terminal.

func hostileHost(t *testing.T, policy string, env ...string) (*rawPeer, string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("Linux: /proc, FIFOs, the terminal supervisor")
	}
	ws := t.TempDir()
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.json"), policy)
	p := startRawEnv(t, env, buildHost(t), "-policy", pol, "-workspace", ws)
	return p, ws
}

func terminalID(t *testing.T, r response) string {
	t.Helper()
	var c struct {
		TerminalID string `json:"terminalId"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &c) != nil || c.TerminalID == "" {
		t.Fatalf("terminal/create: %s %+v", r.Result, r.Error)
	}
	return c.TerminalID
}

// TestHostileEnvInjection: variables that change what a command runs are
// refused, and nothing of the host's environment (an API key) reaches a
// command.
func TestHostileEnvInjection(t *testing.T) {
	p, _ := hostileHost(t, `{"terminal": {"allow": ["/usr/bin/env", "go test **"]}}`, "OPENAI_API_KEY=sk-host-secret-0123456789")
	for i, env := range []string{
		`[{"name":"GOFLAGS","value":"-exec=bash"},{"name":"BASH_ENV","value":"$(id>/tmp/pwned)"}]`,
		`[{"name":"GOFLAGS","value":"-coverprofile=/tmp/overwritten"}]`,
		`[{"name":"BASH_ENV","value":"/tmp/x"}]`,
		`[{"name":"SHELL","value":"/tmp/evil"}]`,
		`[{"name":"LD_PRELOAD","value":"/tmp/x.so"}]`,
		`[{"name":"PATH","value":"/tmp"}]`,
	} {
		r := p.call(strconv.Itoa(i+1), "terminal/create", `{"sessionId":"s","command":"go","args":["test","./..."],"env":`+env+`}`)
		if r.Error == nil {
			t.Errorf("env %s: created %s", env, r.Result)
		}
	}
	r := p.call("10", "terminal/create", `{"sessionId":"s","command":"/usr/bin/env"}`)
	id := terminalID(t, r)
	r = p.call("11", "terminal/wait_for_exit", fmt.Sprintf(`{"sessionId":"s","terminalId":%q}`, id))
	if r.Error != nil || strings.Contains(string(r.Result), "sk-host-secret") || strings.Contains(string(r.Result), "OPENAI") {
		t.Errorf("the host's environment reached the command: %s %+v", r.Result, r.Error)
	}
}

// TestHostileShellEnv: with Harn's shell, BASH_ENV and SHELL are refused
// too.
func TestHostileShellEnv(t *testing.T) {
	p, _ := hostileHost(t, `{"terminal": {"allow": ["echo hi"]}}`)
	r := p.call("1", "host/call", `{"sessionId":"s","name":"process.get_default_shell","args":{}}`)
	if r.Error != nil {
		t.Skip("no shell on this machine")
	}
	for i, name := range []string{"BASH_ENV", "ENV", "SHELL", "ZDOTDIR"} {
		r := p.call(strconv.Itoa(i+2), "terminal/create", `{"sessionId":"s","command":"echo hi","shell":`+string(r.Result)+`,"env":[{"name":"`+name+`","value":"/tmp/x"}]}`)
		if r.Error == nil {
			t.Errorf("%s: created %s", name, r.Result)
		}
	}
}

// TestHostileSpecialFiles: a FIFO and links to /proc/self/fd/* in the
// workspace are refused at once, later requests are still answered, and
// the host exits at the end of its input (startRaw's cleanup checks).
func TestHostileSpecialFiles(t *testing.T) {
	p, ws := hostileHost(t, `{"fs": {"read": ["**"], "write": ["**"]}}`)
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	for _, n := range []string{"0", "1", "2"} {
		if err := os.Symlink("/proc/self/fd/"+n, filepath.Join(ws, "fd"+n)); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"fifo", "fd0", "fd1", "fd2"} {
		path := strconv.Quote(filepath.Join(ws, name))
		r := p.call(strconv.Itoa(2*i+1), "fs/read_text_file", `{"sessionId":"s","path":`+path+`}`)
		if r.Error == nil {
			t.Errorf("read %s: %s", name, r.Result)
		}
		r = p.call(strconv.Itoa(2*i+2), "fs/write_text_file", `{"sessionId":"s","path":`+path+`,"content":"x"}`)
		if r.Error == nil && name == "fifo" {
			t.Errorf("wrote %s", name)
		}
	}
	if r := p.call("20", "host/capabilities", `{}`); r.Error != nil {
		t.Fatalf("host/capabilities after the special files: %+v", r.Error)
	}
}

// TestHostileBackgroundChildren: `sleep 100 &` is gone after
// terminal/kill, terminal/release, the host's exit and a SIGKILL of the
// host.
func TestHostileBackgroundChildren(t *testing.T) {
	policy := `{"terminal": {"allow": ["/bin/sh -c *"]}}`
	create := func(p *rawPeer, id string) (string, string) {
		mark := proctest.Mark(t)
		script := "export " + mark + "; /bin/sleep 100 & /bin/sleep 100"
		r := p.call(id, "terminal/create", `{"sessionId":"s","command":"/bin/sh","args":["-c",`+strconv.Quote(script)+`]}`)
		term := terminalID(t, r)
		proctest.WaitMarked(t, mark, 2, 30*time.Second)
		return term, mark
	}
	t.Run("kill and release", func(t *testing.T) {
		p, _ := hostileHost(t, policy)
		term, mark := create(p, "1")
		if r := p.call("2", "terminal/kill", fmt.Sprintf(`{"sessionId":"s","terminalId":%q}`, term)); r.Error != nil {
			t.Fatal(r.Error)
		}
		proctest.MarkedGone(t, mark, 10*time.Second)
		term, mark = create(p, "3")
		if r := p.call("4", "terminal/release", fmt.Sprintf(`{"sessionId":"s","terminalId":%q}`, term)); r.Error != nil {
			t.Fatal(r.Error)
		}
		proctest.MarkedGone(t, mark, 10*time.Second)
	})
	t.Run("host exit", func(t *testing.T) {
		p, _ := hostileHost(t, policy)
		_, mark := create(p, "1")
		p.stdin.Close()
		proctest.MarkedGone(t, mark, 10*time.Second)
	})
	t.Run("host SIGKILL", func(t *testing.T) {
		p, _ := hostileHost(t, policy)
		_, mark := create(p, "1")
		p.cmd.Process.Signal(syscall.SIGKILL)
		proctest.MarkedGone(t, mark, 10*time.Second)
		p.killed = true
	})
}

// TestHostileCreateFlood: 10,000 terminal/create calls, sent at once, are
// refused past the cap; the host does not crash and keeps answering.
func TestHostileCreateFlood(t *testing.T) {
	p, _ := hostileHost(t, `{"terminal": {"allow": ["/bin/sleep 100"]}}`)
	const n = 10000
	go func() {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"terminal/create","params":{"sessionId":"s%d","command":"/bin/sleep","args":["100"]}}`+"\n", i+1, i%64)
		}
		p.stdin.Write([]byte(b.String()))
	}()
	created, refused := 0, 0
	for range n {
		r := p.next()
		if r.Error != nil {
			refused++
		} else {
			created++
		}
	}
	if created == 0 || created > 64 || created+refused != n {
		t.Fatalf("created %d, refused %d", created, refused)
	}
	if r := p.call(`"after"`, "host/capabilities", `{}`); r.Error != nil {
		t.Fatalf("after the flood: %+v", r.Error)
	}
}

// hwm is the host's peak resident set, from /proc.
func hwm(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestHostileMemoryFloods: a session-id flood (50 ids of 15 MiB) and a
// terminal-output flood (commands printing without end, asking to keep 16
// MiB each) leave the host under 512 MiB, and every reply under a 16 MiB
// frame.
func TestHostileMemoryFloods(t *testing.T) {
	if testing.Short() {
		t.Skip("moves about a GiB through a pipe")
	}
	p, _ := hostileHost(t, `{"terminal": {"allow": ["/usr/bin/yes"]}}`)
	big := strings.Repeat("x", 15<<20)
	for i := range 50 {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"host/call","params":{"sessionId":"%d%s","name":"process.set_default_shell","args":{"shell_id":"sh"}}}`, i+1, i, big))
		p.next()
	}
	var terms []string
	for i := range 40 {
		r := p.call(strconv.Itoa(100+i), "terminal/create", `{"sessionId":"s","command":"/usr/bin/yes","outputByteLimit":16777216}`)
		if r.Error == nil {
			terms = append(terms, terminalID(t, r))
		}
	}
	time.Sleep(2 * time.Second) // let them fill what they keep
	for i, id := range terms {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"terminal/output","params":{"sessionId":"s","terminalId":%q}}`, 200+i, id))
		select {
		case line := <-p.lines:
			if len(line) > 16<<20 {
				t.Errorf("terminal/output reply of %d bytes", len(line))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no terminal/output reply")
		}
	}
	if peak := hwm(t, p.cmd.Process.Pid); peak > 512<<20 {
		t.Errorf("host peaked at %d MiB", peak>>20)
	} else {
		t.Logf("host peaked at %d MiB with %d terminals", peak>>20, len(terms))
	}
}

// TestHostileWaitsDoNotStarve: eight pending terminal/wait_for_exit calls
// leave terminal/kill (and other requests) answered, and the end of input
// with a wait pending ends the host.
func TestHostileWaitsDoNotStarve(t *testing.T) {
	p, ws := hostileHost(t, `{"terminal": {"allow": ["/bin/sleep 100"]}, "fs": {"read": ["**"]}}`)
	writeFile(t, filepath.Join(ws, "a.txt"), "a")
	term := terminalID(t, p.call("1", "terminal/create", `{"sessionId":"s","command":"/bin/sleep","args":["100"]}`))
	ids := fmt.Sprintf(`{"sessionId":"s","terminalId":%q}`, term)
	for i := range 8 {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"terminal/wait_for_exit","params":%s}`, 10+i, ids))
	}
	time.Sleep(200 * time.Millisecond)
	if r := p.call(`"read"`, "fs/read_text_file", `{"sessionId":"s","path":`+strconv.Quote(filepath.Join(ws, "a.txt"))+`}`); r.Error != nil {
		t.Fatalf("fs/read_text_file behind 8 waits: %+v", r.Error)
	}
	if r := p.call(`"kill"`, "terminal/kill", ids); r.Error != nil {
		t.Fatalf("terminal/kill: %+v", r.Error)
	}
	for range 8 {
		if r := p.next(); r.Error != nil || !strings.Contains(string(r.Result), "SIGKILL") {
			t.Errorf("wait: %s %+v", r.Result, r.Error)
		}
	}
	// A wait pending at the end of input: the host exits all the same.
	term = terminalID(t, p.call("2", "terminal/create", `{"sessionId":"s","command":"/bin/sleep","args":["100"]}`))
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"terminal/wait_for_exit","params":{"sessionId":"s","terminalId":%q}}`, term))
	time.Sleep(100 * time.Millisecond)
	p.stdin.Close()
}

var _ = bufio.NewReader
var _ = exec.Command
