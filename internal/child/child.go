// Package child starts the programs bridgekit's clients and servers speak
// to over stdio, and keeps the end of what they write on stderr.
package child

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// Start starts cmd with its stdin and stdout on pipes of our own and
// returns our ends: stdin to write to the child, stdout to read from it.
// Pipes of our own rather than cmd.StdinPipe/StdoutPipe, because
// exec.Cmd.Wait closes those as soon as the child exits, losing what it
// wrote last; and these are pollable, so a read deadline can bound the wait
// for a grandchild that keeps the pipe open. cmd.Stdin and cmd.Stdout must
// be nil; on error nothing is left open.
func Start(cmd *exec.Cmd) (stdin, stdout *os.File, err error) {
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = childIn, childOut
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, nil, err
	}
	return stdin, stdout, nil
}

// Terminate asks p to stop (SIGTERM) or, where it cannot be asked, kills
// it.
func Terminate(p *os.Process) {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		_ = p.Kill()
	}
}

// Tail is an io.Writer that keeps the last Max bytes written to it (a
// child's stderr) and copies everything to Tee when set. A failing Tee
// never fails or blocks the write: the child must not stall on it.
type Tail struct {
	Max int
	Tee io.Writer

	mu  sync.Mutex
	buf []byte
	cut bool // bytes were dropped from the front
}

// Write implements io.Writer; it never fails.
func (t *Tail) Write(b []byte) (int, error) {
	if t.Tee != nil {
		_, _ = t.Tee.Write(b)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(b) >= t.Max {
		t.cut = t.cut || len(t.buf) > 0 || len(b) > t.Max
		t.buf = append(t.buf[:0], b[len(b)-max(t.Max, 0):]...)
		return len(b), nil
	}
	if over := len(t.buf) + len(b) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	t.buf = append(t.buf, b...)
	return len(b), nil
}

// String returns what was kept, from a rune boundary, trimmed and made
// valid UTF-8, with "…" in front when its start was dropped.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if t.cut { // start at a rune: the front of this one was dropped
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if t.cut && s != "" {
		s = "…" + s
	}
	return s
}
