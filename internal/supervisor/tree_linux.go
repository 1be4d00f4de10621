//go:build linux

package supervisor

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Tree is a command started by StartTree: its supervisor, the control
// pipe to it, and the command's exit.
type Tree struct {
	// Cmd is the supervisor's command; its Wait returns once the
	// supervisor has exited, after the whole tree is gone or the tree was
	// released.
	Cmd *exec.Cmd

	mu   sync.Mutex
	ctl  *os.File // the control pipe's write end; nil once released
	exit chan Exit
}

// Exit is how a command ended.
type Exit struct {
	// Code is the exit status, when the command exited.
	Code int
	// Signal is the signal that ended it, 0 when it exited.
	Signal syscall.Signal
}

// StartTree starts c's program under a supervisor that leads a process
// group of its own and starts the command in another. The command's exit
// is reported by Exit; the supervisor stays as long as processes the
// command left behind run, until Release (or this program's end) kills
// them. c must not have been started; its Stdin, Stdout and Stderr are the
// command's, its Path, Args, Dir, Env and ExtraFiles say what to run.
//
// The command can kill its supervisor (it runs as the same user). When the
// supervisor's status pipe ends without its last word, this program kills
// what is left in the command's group itself; a process that has also
// left the group (setsid), or a kill within moments of the start, before
// the supervisor has reported the command's pid, escapes that.
func StartTree(c *exec.Cmd) (*Tree, error) {
	if c.Err != nil {
		return nil, c.Err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	st, pid, err := launch(c, modeTree, ctlR)
	ctlR.Close()
	if err != nil {
		ctlW.Close()
		return nil, err
	}
	t := &Tree{Cmd: c, ctl: ctlW, exit: make(chan Exit, 1)}
	go func() {
		defer st.Close()
		line := st.line()
		t.exit <- parseExit(line)
		if line == "" || st.line() != "done" {
			// Something killed the supervisor, before or after the
			// command's end (the command itself can: it runs as the same
			// user), so what the command left behind is no subreaper's
			// child now. What is still in its group is killed from here:
			// the group's id stays theirs while any of them runs (were
			// none left, it would have been free only since the
			// supervisor died, a moment ago). A process that also left
			// the group (setsid) escapes: only a cgroup or a PID
			// namespace could hold it.
			if pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}()
	return t, nil
}

// Exit returns the command's exit once it is known; it may be called once.
func (t *Tree) Exit() Exit { return <-t.exit }

// Kill kills the command and every process it started; the supervisor
// stays to report the command's exit.
func (t *Tree) Kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctl != nil {
		_, _ = t.ctl.Write([]byte{'k'})
	}
}

// Release kills the tree and lets the supervisor exit.
func (t *Tree) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctl != nil {
		_, _ = t.ctl.Write([]byte{'k'})
		t.ctl.Close()
		t.ctl = nil
	}
}

// parseExit reads the supervisor's "exit N" or "signal N".
func parseExit(line string) Exit {
	word, rest, _ := strings.Cut(line, " ")
	n, err := strconv.Atoi(rest)
	switch {
	case word == "exit" && err == nil:
		return Exit{Code: n}
	case word == "signal" && err == nil && n > 0:
		return Exit{Signal: syscall.Signal(n)}
	}
	// The supervisor died without a word: it was killed.
	return Exit{Signal: syscall.SIGKILL}
}
