//go:build linux

package terminal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// How a command is contained on Linux: the host does not start it itself
// but starts a supervisor, a copy of its own program (/proc/self/exe) that
// init in this package recognises by supervisorEnv and argv[1] and turns
// into a small loop before main runs. The supervisor
//
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER), so every process the
//     command starts that loses its parent (`sleep 100 &`, a daemon that
//     double-forks, one that calls setsid) becomes its child;
//   - starts the command in a process group of its own, with
//     Pdeathsig SIGKILL, and reports its status to the host on a pipe;
//   - holds the read end of a control pipe whose write end only the host
//     has: a byte on it means "kill", and its end of file (the host
//     released the terminal, exited, or was SIGKILLed: the kernel closes
//     the host's descriptors in every case) means "kill and exit";
//   - kills by sending SIGKILL to the command's group and to every
//     descendant it finds in /proc, until it has no child left.
//
// So a SIGKILLed host still leaves nothing running: its supervisors see
// the end of their control pipes and end their trees. A supervisor that is
// itself SIGKILLed takes its command with it (Pdeathsig).
const (
	supervisorEnv  = "BRIDGEKIT_TERMINAL_SUPERVISOR"
	supervisorArg  = "bridgekit-terminal-supervisor"
	prSetSubreaper = 36 // PR_SET_CHILD_SUBREAPER
)

func init() {
	if os.Getenv(supervisorEnv) != "1" || len(os.Args) < 3 || os.Args[1] != supervisorArg {
		return
	}
	os.Exit(supervise(os.Args[2], os.Args[3:]))
}

// startSupervised starts cmd's program under a supervisor: the returned
// cmd is the supervisor's, ctl its control pipe and status its status pipe.
func startSupervised(c *exec.Cmd) (*process, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	sup := exec.Command("/proc/self/exe", append([]string{supervisorArg, c.Path}, c.Args[1:]...)...)
	sup.Args[0] = c.Args[0]
	sup.Dir, sup.Stdout, sup.Stderr = c.Dir, c.Stdout, c.Stderr
	sup.Env = append(append([]string{}, c.Env...), supervisorEnv+"=1")
	sup.ExtraFiles = []*os.File{ctlR, stW}
	sup.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sup.WaitDelay = c.WaitDelay
	err = sup.Start()
	ctlR.Close()
	stW.Close()
	if err != nil {
		ctlW.Close()
		stR.Close()
		return nil, err
	}
	p := &process{cmd: sup, ctl: ctlW, statusCh: make(chan Status, 1)}
	// The supervisor's reports: "started" or "error TEXT", then "exit N"
	// or "signal N".
	br := bufio.NewReader(stR)
	first := make(chan string, 1)
	go func() {
		line, _ := br.ReadString('\n')
		first <- strings.TrimSpace(line)
	}()
	var line string
	select {
	case line = <-first:
	case <-time.After(startTimeout):
		line = "error the supervisor did not start the command within " + startTimeout.String()
	}
	if line != "started" {
		p.release()
		_ = sup.Wait()
		stR.Close()
		if msg, ok := strings.CutPrefix(line, "error "); ok {
			return nil, errors.New(msg)
		}
		return nil, errors.New("the supervisor ended before starting the command")
	}
	go func() {
		line, _ := br.ReadString('\n')
		stR.Close()
		p.statusCh <- parseStatus(strings.TrimSpace(line))
	}()
	return p, nil
}

// startTimeout bounds how long the supervisor may take to start a command.
const startTimeout = 10 * time.Second

func parseStatus(line string) Status {
	word, rest, _ := strings.Cut(line, " ")
	n, err := strconv.Atoi(rest)
	switch {
	case word == "exit" && err == nil:
		return Status{ExitCode: &n}
	case word == "signal" && err == nil:
		return Status{Signal: signalName(syscall.Signal(n))}
	}
	// The supervisor died without a word: it was killed.
	return Status{Signal: "SIGKILL"}
}

// supervise is the supervisor's main: fd 3 is the control pipe, fd 4 the
// status pipe.
func supervise(path string, args []string) int {
	ctl, status := os.NewFile(3, "control"), os.NewFile(4, "status")
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetSubreaper, 1, 0)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, supervisorEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = os.Args[0]
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(status, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	fmt.Fprintf(status, "started\n")
	os.Stdout.Close()
	os.Stderr.Close()
	pgid := cmd.Process.Pid

	orders := make(chan bool, 1) // true: the control pipe ended
	go func() {
		b := make([]byte, 1)
		for {
			if _, err := ctl.Read(b); err != nil {
				orders <- true
				return
			}
			select {
			case orders <- false:
			default:
			}
		}
	}()
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
		case cmd.ProcessState != nil:
			fmt.Fprintf(status, "exit %d\n", cmd.ProcessState.ExitCode())
		default:
			fmt.Fprintf(status, "error %v\n", err)
		}
		status.Close()
		close(exited)
	}()
	kill := func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		// Reaping before the command's own Wait would steal its status.
		killTree(exited == nil)
	}
	// Once told to kill, it keeps killing: a process the command left
	// behind can be on its way to this subreaper (its parent dying) while
	// the tree is walked, and is caught on the next tick.
	killing := false
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case end := <-orders:
			killing = true
			kill()
			if end {
				if exited != nil {
					<-exited
					exited = nil
				}
				killTree(true)
				for deadline := time.Now().Add(5 * time.Second); reap() && time.Now().Before(deadline); {
					killTree(true)
					time.Sleep(10 * time.Millisecond)
				}
				return 0
			}
		case <-exited:
			exited = nil
			if killing {
				killTree(true)
			}
			if !reap() {
				return 0
			}
		case <-tick.C:
			if killing {
				kill()
			}
			if exited == nil && !reap() {
				return 0 // the command and everything it started are gone
			}
		}
	}
}

// reap collects exited children (after the command's own wait) and
// reports whether any child is left.
func reap() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.ECHILD):
			return false
		case err != nil || pid == 0:
			return true
		}
	}
}

// killTree SIGKILLs every descendant of this process, again and again,
// until none is left alive (or a few seconds passed), reaping them when
// reaping is set. Orphans come to it as its subreaper, so the tree cannot
// slip away by reparenting.
func killTree(reaping bool) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		alive := 0
		for _, pid := range descendants(os.Getpid()) {
			if _, state, ok := stat(pid); ok && state != "Z" {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				alive++
			}
		}
		if reaping {
			reap()
		}
		if alive == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// descendants lists the processes below root: from the kernel's children
// lists (/proc/PID/task/TID/children), walking only the tree, or, where
// the kernel has no such lists, from the parents of every process.
func descendants(root int) []int {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"); err != nil {
		return scanDescendants(root)
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 && len(out) < 1<<16 {
		pid := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, task := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil && !seen[c] {
					seen[c] = true
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// scanDescendants finds the processes below root from every process's
// parent.
func scanDescendants(root int) []int {
	parents := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if pp, _, ok := stat(pid); ok {
				parents[pid] = pp
			}
		}
	}
	var out []int
	for pid := range parents {
		for p, hops := parents[pid], 0; p > 1 && hops < 1000; p, hops = parents[p], hops+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// stat reads the parent and the state of pid from /proc/PID/stat.
func stat(pid int) (int, string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, f[0], err == nil
}

// kill asks the supervisor to kill the tree.
func (p *process) kill() {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.ctl != nil {
		_, _ = p.ctl.Write([]byte{'k'})
	}
}

// release kills the tree and lets the supervisor exit.
func (p *process) release() {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.ctl != nil {
		_, _ = p.ctl.Write([]byte{'k'})
		p.ctl.Close()
		p.ctl = nil
	}
}
