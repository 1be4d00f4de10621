//go:build linux

package supervisor

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// OrderTimeout bounds how long the host waits for a supervisor to answer
// a kill order, or to exit once released, before it kills the tree
// itself: a supervisor that does not answer (stopped, or too slow) never
// holds a kill up for longer.
var OrderTimeout = time.Second

// Tree is a command started by StartTree: its supervisor, the control
// pipe to it, and the command's exit.
type Tree struct {
	// Cmd is the supervisor's command (the command's own when there is no
	// supervisor, under None). Do not Wait on it: Tree.Wait does.
	Cmd *exec.Cmd

	h      *handle // nil under None
	exit   chan Exit
	waited chan struct{} // closed once Cmd.Wait has returned
	ended  chan struct{} // closed once the status pipe ended (the supervisor is gone)

	mu      sync.Mutex
	ctl     *os.File    // the control pipe's write end; nil once released
	pending bool        // a kill order not answered yet
	timer   *time.Timer // the pending order's deadline; nil once it passed
	forcing atomic.Bool // a kill from this program is under way (not PIDNamespace)
}

// Exit is how a command ended.
type Exit struct {
	// Code is the exit status, when the command exited.
	Code int
	// Signal is the signal that ended it, 0 when it exited.
	Signal syscall.Signal
}

// StartTree starts c's program under a supervisor, in a process group of
// its own. The command's exit is reported by Exit; the supervisor stays as
// long as processes the command left behind run, until Release (or this
// program's end, however it ends) kills them. c must not have been
// started; its Stdin, Stdout and Stderr are the command's, its Path, Args,
// Dir, Env and ExtraFiles say what to run.
//
// Kill and Release never block: they send the supervisor an order on a
// pipe (at most one order is ever in flight), and an order that is not
// answered within OrderTimeout is carried out from here: under
// PIDNamespace by killing the supervisor, whose namespace dies with it;
// otherwise by killing the command's group, its cgroup (Cgroup) and every
// process below the supervisor, walking the tree.
func StartTree(c *exec.Cmd) (*Tree, error) {
	if c.Err != nil {
		return nil, c.Err
	}
	cur := Current()
	if cur.Err != nil {
		return nil, cur.Err
	}
	t := &Tree{Cmd: c, exit: make(chan Exit, 1), waited: make(chan struct{}), ended: make(chan struct{})}
	if cur.Means == None {
		if c.SysProcAttr == nil {
			c.SysProcAttr = &syscall.SysProcAttr{}
		}
		c.SysProcAttr.Setpgid, c.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
		if err := spawn(c.Start); err != nil {
			return nil, err
		}
		close(t.ended)
		go func() {
			_ = c.Wait()
			t.exit <- exitOf(c.ProcessState)
			close(t.waited)
		}()
		return t, nil
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t.h, err = launch(c, modeTree, ctlR, cur.Means)
	ctlR.Close()
	if err != nil {
		ctlW.Close()
		return nil, err
	}
	t.ctl = ctlW
	go func() {
		_ = c.Wait()
		close(t.waited)
	}()
	go t.watch()
	return t, nil
}

// watch reads the supervisor's reports until its status pipe ends.
func (t *Tree) watch() {
	defer close(t.ended)
	defer t.h.st.Close()
	reported, done := false, false
	for {
		line := t.h.st.line()
		if line == "" {
			break
		}
		switch {
		case line == "killed":
			t.mu.Lock()
			t.pending = false
			if t.timer != nil {
				t.timer.Stop()
				t.timer = nil
			}
			t.mu.Unlock()
		case line == "done":
			done = true
		case !reported && (strings.HasPrefix(line, "exit ") || strings.HasPrefix(line, "signal ")):
			reported = true
			t.exit <- parseExit(line)
		}
	}
	if !reported {
		t.exit <- Exit{Signal: syscall.SIGKILL} // the supervisor died first: killed
	}
	t.mu.Lock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.mu.Unlock()
	if !done && t.h.means != PIDNamespace {
		// Something killed the supervisor before its last word (the command
		// itself can: it runs as the same user), so what the command left
		// behind is no subreaper's child now: what is still in its group or
		// its cgroup is killed from here. (The group's id stays theirs
		// while any of them runs; were none left, it would have been free
		// only since the supervisor died, a moment ago.)
		if t.h.pid > 0 {
			_ = syscall.Kill(-t.h.pid, syscall.SIGKILL)
		}
	}
	if t.h.cg != nil {
		t.h.cg.remove()
	}
}

// Exit returns the command's exit once it is known; it may be called once.
func (t *Tree) Exit() Exit { return <-t.exit }

// Wait waits for the supervisor to exit (the command, under None): once
// the whole tree is gone, or the tree was released.
func (t *Tree) Wait() { <-t.waited }

// Kill kills the command and every process it started; the supervisor
// stays to report the command's exit. It never blocks.
func (t *Tree) Kill() {
	if t.h == nil {
		_ = syscall.Kill(-t.Cmd.Process.Pid, syscall.SIGKILL)
		return
	}
	t.mu.Lock()
	if t.ctl == nil {
		t.mu.Unlock()
		return
	}
	if t.pending {
		overdue := t.timer == nil
		t.mu.Unlock()
		if overdue { // still unanswered: kill again from here
			t.force(false)
		}
		return
	}
	if !order(t.ctl) {
		t.pending = true
		t.mu.Unlock()
		t.force(false)
		return
	}
	t.pending = true
	t.timer = time.AfterFunc(OrderTimeout, t.unanswered)
	t.mu.Unlock()
}

// unanswered carries out a kill order the supervisor has not answered.
func (t *Tree) unanswered() {
	t.mu.Lock()
	pending := t.pending
	t.timer = nil
	t.mu.Unlock()
	if pending {
		t.force(false)
	}
}

// Release kills the tree and lets the supervisor exit. It never blocks; a
// supervisor that has not exited within OrderTimeout is killed from here
// with its tree.
func (t *Tree) Release() {
	if t.h == nil {
		_ = syscall.Kill(-t.Cmd.Process.Pid, syscall.SIGKILL)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctl == nil {
		return
	}
	order(t.ctl)
	t.ctl.Close() // the end of the pipe: the supervisor kills everything and exits
	t.ctl = nil
	if t.timer != nil {
		t.timer.Stop()
	}
	t.timer = time.AfterFunc(OrderTimeout, func() {
		select {
		case <-t.ended:
		default:
			t.force(true)
		}
	})
}

// KillNow kills the tree from this program at once, supervisor included,
// without asking the supervisor; for a host that can wait no longer.
func (t *Tree) KillNow() {
	if t.h == nil {
		_ = syscall.Kill(-t.Cmd.Process.Pid, syscall.SIGKILL)
		return
	}
	t.Release()
	t.force(true)
}

// force kills the tree from this program. Under PIDNamespace killing the
// supervisor, the namespace's init, kills every process in the namespace.
// Otherwise it kills the command's group and cgroup, then walks the tree
// below the supervisor (a subreaper: nothing below it can leave while it
// lives, even stopped) killing every process, then kills the supervisor
// (release) or wakes it (a kill, after which it is to report the exit).
// It never blocks: the walk runs on a goroutine of its own.
func (t *Tree) force(release bool) {
	if t.h.means == PIDNamespace {
		_ = t.Cmd.Process.Kill()
		return
	}
	if t.h.pid > 0 {
		_ = syscall.Kill(-t.h.pid, syscall.SIGKILL)
	}
	if t.h.cg != nil {
		t.h.cg.kill()
	}
	if !t.forcing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer t.forcing.Store(false)
		select {
		case <-t.ended:
			return
		default:
		}
		killBelow(t.Cmd.Process.Pid)
		if release {
			_ = t.Cmd.Process.Kill()
		} else {
			_ = t.Cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
}

// order writes a kill order to the control pipe without blocking, and
// reports whether it was written (a full pipe means the supervisor has
// not read in a long while).
func order(ctl *os.File) bool {
	rc, err := ctl.SyscallConn()
	if err != nil {
		return false
	}
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		_, werr = syscall.Write(int(fd), []byte{'k'})
		return true // never wait for room
	}); err != nil {
		return false
	}
	return werr == nil
}

// killBelow SIGKILLs every process below root, again and again until none
// is left alive (or a few seconds passed); root's children, which it
// reaps, stay as zombies until it does.
func killBelow(root int) { killBelowFor(root, 5*time.Second) }

// killBelowFor is killBelow for at most d.
//
// It stops after a few passes in a row find nothing alive: a process whose
// parent was just killed is on its way to the subreaper, and a walk made
// meanwhile can miss it.
func killBelowFor(root int, d time.Duration) {
	deadline := time.Now().Add(d)
	pause, quiet := time.Millisecond, 0
	for time.Now().Before(deadline) && quiet < 3 {
		alive := 0
		for _, pid := range descendants(root) {
			if _, state, ok := stat(pid); ok && state != "Z" {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				alive++
			}
		}
		if alive == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// exitOf is a ProcessState as an Exit.
func exitOf(ps *os.ProcessState) Exit {
	if ps == nil {
		return Exit{Signal: syscall.SIGKILL}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Signal: ws.Signal()}
	}
	return Exit{Code: ps.ExitCode()}
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
