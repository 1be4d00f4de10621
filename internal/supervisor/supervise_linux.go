//go:build linux

package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER

// init turns this copy of the program into a supervisor when it was
// started as one: argv is [argv0, argMark, mode, number of extra files,
// path, args...].
func init() {
	if len(os.Args) < 5 || os.Args[1] != argMark || os.Getenv(envVar) != "1" {
		return
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil || n < 0 || n > 1<<16 || (os.Args[2] != modeMirror && os.Args[2] != modeTree) {
		syscall.Exit(127)
	}
	// syscall.Exit, not os.Exit: nothing is buffered, and under the race
	// detector os.Exit sleeps a second before exiting (GORACE
	// atexit_sleep_ms), which the command's host would wait for.
	syscall.Exit(supervise(os.Args[2], n, os.Args[4], os.Args[5:]))
}

// supervise is the supervisor's main. Its descriptors: 0, 1 and 2 and
// the extra files 3 to 3+extra-1 are the command's; 3+extra is the
// control pipe, 4+extra the status pipe.
func supervise(mode string, extra int, path string, args []string) int {
	ctlFD, stFD := 3+extra, 4+extra
	// The command must not inherit the supervisor's own pipes.
	syscall.CloseOnExec(ctlFD)
	syscall.CloseOnExec(stFD)
	ctl, status := os.NewFile(uintptr(ctlFD), "control"), os.NewFile(uintptr(stFD), "status")
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	// Signals sent to the command's group reach the supervisor too (in
	// mirror mode it leads that group): it survives them all but SIGKILL,
	// and SIGCHLD tells it to reap the orphans that came to it.
	// A signal the program was started with ignored stays ignored, as the
	// command would inherit it.
	sigs := make(chan os.Signal, 16)
	var catch []os.Signal
	for n := 1; n < 65; n++ {
		if s := syscall.Signal(n); s != syscall.SIGKILL && s != syscall.SIGSTOP && !signal.Ignored(s) {
			catch = append(catch, s)
		}
	}
	signal.Notify(sigs, catch...)

	files := make([]*os.File, extra)
	for i := range files {
		files[i] = os.NewFile(uintptr(3+i), "extra "+strconv.Itoa(i))
	}
	cmd := &exec.Cmd{
		Path: path, Args: append([]string{os.Args[0]}, args...),
		Env:   slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envVar+"=") }),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, ExtraFiles: files,
		// In mirror mode the command stays in the supervisor's group, so
		// that the group's signals reach it as they reached it unsupervised.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: mode == modeTree, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		errno := 0
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			if e, ok := pe.Err.(syscall.Errno); ok {
				errno = int(e)
			}
		}
		fmt.Fprintf(status, "error %d %s\n", errno, strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	fmt.Fprintf(status, "started %d\n", cmd.Process.Pid)
	// Only the command's tree holds its descriptors now: the host sees the
	// end of its output once they are gone.
	release(files)
	pid := cmd.Process.Pid
	if mode == modeMirror {
		status.Close()
		status = nil
	}

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
	if status != nil {
		// The last word, once everything is gone: a status pipe that ends
		// without it tells the host that something killed the supervisor,
		// which then kills what is left in the command's group itself.
		defer fmt.Fprint(status, "done\n")
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		if status != nil {
			fmt.Fprintf(status, "%s\n", report(cmd.ProcessState))
		}
		close(exited)
	}()
	kill := func() {
		if mode == modeTree {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		// Reaping before the command's own Wait would steal its status.
		killTree(exited == nil)
	}
	var tick <-chan time.Time
	if mode == modeTree {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	// Once told to kill, it keeps killing: a process the command left
	// behind can be on its way to this subreaper (its parent dying) while
	// the tree is walked, and is caught on the next tick.
	killing := false
	for {
		select {
		case end := <-orders:
			killing = true
			kill()
			if end {
				if exited != nil {
					<-exited
				}
				endTree()
				if mode == modeMirror {
					return mirror(cmd.ProcessState)
				}
				return 0
			}
		case <-exited:
			exited = nil
			if mode == modeMirror {
				// The command is gone: so is what it left behind, then the
				// supervisor, the way the command went.
				endTree()
				return mirror(cmd.ProcessState)
			}
			if killing {
				killTree(true)
			}
			if !reap() {
				return 0
			}
		case s := <-sigs:
			if s == syscall.SIGCHLD {
				if exited == nil {
					reap()
				} else {
					reapOrphans(pid)
				}
			}
		case <-tick:
			if killing {
				kill()
			}
			if exited == nil && !reap() {
				return 0 // the command and everything it started are gone
			}
		}
	}
}

// release points the supervisor's own stdin, stdout and stderr at
// /dev/null and closes the extra files, once the command has them.
func release(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
	null, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		os.Stdin.Close()
		os.Stdout.Close()
		os.Stderr.Close()
		return
	}
	for fd := range 3 {
		_ = syscall.Dup3(null, fd, 0)
	}
	syscall.Close(null)
}

// report is a command's end as a status line: "exit N" or "signal N".
func report(ps *os.ProcessState) string {
	if ps == nil {
		return "signal 9"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + strconv.Itoa(int(ws.Signal()))
	}
	return "exit " + strconv.Itoa(ps.ExitCode())
}

// mirror ends the supervisor the way the command ended: with its exit
// code, or killed by its signal.
func mirror(ps *os.ProcessState) int {
	if ps == nil {
		dieBy(syscall.SIGKILL)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		dieBy(ws.Signal())
	}
	return ps.ExitCode()
}

// dieBy kills the supervisor with sig, bypassing the Go runtime's
// handlers: the signal's default action (no core file: the command's
// core, if any, is the command's).
func dieBy(sig syscall.Signal) {
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	// An all-zero struct sigaction is SIG_DFL on every architecture; the
	// kernel's sigset is 8 bytes but on MIPS, where it is 16.
	var act [64]byte
	for _, size := range []uintptr{8, 16} {
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, size, 0, 0); e == 0 {
			break
		}
	}
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Second)
	syscall.Exit(128 + int(sig))
}

// endTree kills everything left below the supervisor, reaping it, for up
// to a few seconds; the command has been waited for.
func endTree() {
	killTree(true)
	for deadline := time.Now().Add(5 * time.Second); reap() && time.Now().Before(deadline); {
		killTree(true)
		time.Sleep(10 * time.Millisecond)
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

// reapOrphans collects the exited children of the supervisor but the
// command (pid), which the command's own Wait collects.
func reapOrphans(pid int) {
	for _, c := range children(os.Getpid()) {
		if c != pid {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(c, &ws, syscall.WNOHANG, nil)
		}
	}
}

// killTree SIGKILLs every descendant of this process, again and again,
// until none is left alive (or a few seconds passed), reaping them when
// reaping is set. Orphans come to it as its subreaper, so the tree cannot
// slip away by reparenting.
func killTree(reaping bool) {
	deadline := time.Now().Add(5 * time.Second)
	// A process killed is gone within a millisecond or so: look again
	// soon, then less often.
	pause := time.Millisecond
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
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// descendants lists the processes below root, walking the tree.
func descendants(root int) []int {
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 && len(out) < 1<<16 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children(pid) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// haveChildrenLists: the kernel lists each task's children
// (/proc/PID/task/TID/children, CONFIG_PROC_CHILDREN).
var haveChildrenLists = func() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	return err == nil
}()

// children lists pid's children: from the kernel's lists, or, where it
// has none, from the parent of every process.
func children(pid int) []int {
	var out []int
	if !haveChildrenLists {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if c, err := strconv.Atoi(e.Name()); err == nil {
				if pp, _, ok := stat(c); ok && pp == pid {
					out = append(out, c)
				}
			}
		}
		return out
	}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
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
