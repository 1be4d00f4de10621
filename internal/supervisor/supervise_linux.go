//go:build linux

package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const (
	prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER
	prCapAmbient        = 47 // PR_CAP_AMBIENT
	prCapAmbientClear   = 4  // PR_CAP_AMBIENT_CLEAR_ALL
	modeNSMirror        = "nsmirror"
)

// init turns this copy of the program into a supervisor when it was
// started as one: argv is [argv0, argMark, mode, number of extra files,
// how, path, args...], how being "ns:UID:GID" (PIDNamespace), "cgroup"
// or "subreaper".
func init() {
	if len(os.Args) < 3 || os.Args[1] != argMark || os.Getenv(envVar) != "1" {
		return
	}
	// syscall.Exit, not os.Exit: nothing is buffered, and under the race
	// detector os.Exit sleeps a second before exiting (GORACE
	// atexit_sleep_ms), which the command's host would wait for.
	if os.Args[2] == modeNoop {
		syscall.Exit(0)
	}
	if len(os.Args) < 6 {
		syscall.Exit(127)
	}
	n, err := strconv.Atoi(os.Args[3])
	switch mode := os.Args[2]; {
	case err != nil || n < 0 || n > 1<<16:
	case mode == modeMirror && strings.HasPrefix(os.Args[4], "ns:"):
		syscall.Exit(relay(n, os.Args[4], os.Args[5:]))
	case mode == modeMirror, mode == modeTree, mode == modeProbe, mode == modeNSMirror:
		syscall.Exit(supervise(mode, n, os.Args[4], os.Args[5], os.Args[6:]))
	}
	syscall.Exit(127)
}

// supervise is the supervisor's main: it starts the command, reports, and
// carries out orders. Its descriptors: 0, 1 and 2 and the extra files 3 to
// 3+extra-1 are the command's; 3+extra is the control pipe, 4+extra the
// status pipe.
//
// With how "ns:UID:GID" it is the init of a PID namespace (the host's
// direct child for a tree and the probe; the relay's for a Start): the
// kernel neither delivers SIGKILL and SIGSTOP to it from inside the
// namespace nor lets a process leave, and kills everything in the
// namespace when it exits. Otherwise it is a child subreaper in the host's
// namespace.
func supervise(mode string, extra int, how, path string, args []string) int {
	ctlFD, stFD := 3+extra, 4+extra
	// The command must not inherit the supervisor's own pipes.
	syscall.CloseOnExec(ctlFD)
	syscall.CloseOnExec(stFD)
	ctl, status := os.NewFile(uintptr(ctlFD), "control"), os.NewFile(uintptr(stFD), "status")
	ns := strings.HasPrefix(how, "ns:")
	attr := &syscall.SysProcAttr{
		// A tree's command leads a group of its own; a Start's stays in the
		// supervisor's, so that the group's signals reach it as they did
		// unsupervised.
		Setpgid:   mode == modeTree,
		Pdeathsig: syscall.SIGKILL,
	}
	var flags []string
	if ns {
		// Everything below runs on this thread, which the mount namespace
		// and the dropped capabilities belong to; the command is started
		// from it.
		runtime.LockOSThread()
		// Not dumpable: a process without CAP_SYS_PTRACE in this user
		// namespace (the command has none) cannot trace it or read its
		// memory.
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
		if ownProc() == nil {
			flags = append(flags, "procfs")
		}
		uid, gid, ok := ids(how)
		if !ok {
			fmt.Fprintf(status, "error 0 bad supervisor ids %q\n", how)
			return 127
		}
		dropCapabilities()
		// The command runs in a nested user namespace that maps the host's
		// user and group back (this one maps them to root), so it sees its
		// own ids and has no capability here.
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: 0, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: 0, Size: 1}}
	} else {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	}
	// Signals sent to the command's group reach the supervisor too (in
	// mirror mode it leads that group): it survives them all but SIGKILL,
	// and SIGCHLD tells it to reap. A signal the program was started with
	// ignored stays ignored, as the command would inherit it.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, catchable()...)

	if mode == modeProbe {
		p, err := os.StartProcess(exe, []string{"probe", argMark, modeNoop}, &os.ProcAttr{Env: []string{envVar + "=1"}, Sys: attr})
		if err == nil {
			if st, err := p.Wait(); err == nil && st.Success() {
				flags = append(flags, "nested")
			}
		}
		fmt.Fprintf(status, "started 0 %s\n", strings.Join(flags, " "))
		return 0
	}

	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i := range extra {
		files = append(files, os.NewFile(uintptr(3+i), "extra "+strconv.Itoa(i)))
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envVar+"=") })
	argv := append([]string{os.Args[0]}, args...)
	p, err := os.StartProcess(path, argv, &os.ProcAttr{Env: env, Files: files, Sys: attr})
	if err != nil && ns && nestedFailure(err) {
		// No nested user namespace here: the command runs in this one,
		// still without capabilities (dropCapabilities).
		attr.Cloneflags, attr.UidMappings, attr.GidMappings = 0, nil, nil
		flags = append(flags, "unnested")
		p, err = os.StartProcess(path, argv, &os.ProcAttr{Env: env, Files: files, Sys: attr})
	}
	if err != nil {
		errno := 0
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			if e, ok := pe.Err.(syscall.Errno); ok {
				errno = int(e)
			}
		}
		fmt.Fprintf(status, "error %d %s\n", errno, strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	pid := p.Pid
	_ = p.Release() // reaped below, with everything else
	fmt.Fprintf(status, "started %d %s\n", pid, strings.Join(flags, " "))
	// Only the command's tree holds its descriptors now: the host sees the
	// end of its output once they are gone.
	release(files[3:])

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
	w := &watch{ns: ns, tree: mode == modeTree, pid: pid}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	reported, killing := false, false
	for {
		left := w.reap()
		if w.status != nil && !reported && mode != modeMirror {
			reported = true
			fmt.Fprintf(status, "%s\n", report(w.status))
		}
		switch {
		case w.status != nil && mode != modeTree:
			// The command is gone: so is what it left behind, then the
			// supervisor, the way the command went.
			w.end()
			if mode == modeNSMirror {
				return 0 // the relay mirrors the command's end
			}
			return mirror(w.status)
		case w.status != nil && !left:
			fmt.Fprint(status, "done\n") // the last word, once everything is gone
			return 0
		}
		select {
		case end := <-orders:
			killing = true
			w.kill()
			if end {
				w.end()
				if mode == modeMirror {
					return mirror(w.status)
				}
				if !reported {
					fmt.Fprintf(status, "%s\n", report(w.status)) // "signal 9" when it was not reaped
				}
				fmt.Fprint(status, "done\n")
				return 0
			}
			fmt.Fprint(status, "killed\n")
		case <-sigs:
		case <-tick.C:
			// Once told to kill, it keeps killing: a process the command
			// left behind can be on its way to this subreaper (its parent
			// dying) while the tree is walked.
			if killing {
				w.kill()
			}
		}
	}
}

// watch is what a supervisor holds: the command (pid), and its status
// once reaped.
type watch struct {
	ns, tree bool
	pid      int
	status   *syscall.WaitStatus
}

// reap collects every child that exited, the command's status among them,
// and reports whether any child is left.
func (w *watch) reap() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECHILD):
			return false
		case err != nil || pid == 0:
			return true
		}
		if pid == w.pid && (ws.Exited() || ws.Signaled()) {
			s := ws
			w.status = &s
		}
	}
}

// kill kills every process below the supervisor: in a PID namespace,
// every process of it (kill(-1) from its init spares only the init);
// otherwise the command's group and every descendant, walking the tree.
func (w *watch) kill() {
	if w.ns {
		_ = syscall.Kill(-1, syscall.SIGKILL)
		return
	}
	if w.tree {
		_ = syscall.Kill(-w.pid, syscall.SIGKILL)
	}
	killTree(os.Getpid())
}

// end kills everything left below the supervisor and reaps it, for up to
// a few seconds.
func (w *watch) end() {
	w.kill()
	for deadline := time.Now().Add(5 * time.Second); w.reap() && time.Now().Before(deadline); {
		w.kill()
		time.Sleep(10 * time.Millisecond)
	}
}

// relay is a Start's supervisor under PIDNamespace. The init of a PID
// namespace cannot die by a signal (but SIGKILL from outside), so the init
// runs below this relay, which stays in the host's namespace (where
// nothing in the new one can name it, nor trace it from its user
// namespace), dies with the host (Pdeathsig), kills the init (and so the
// namespace) when the host ends, and exits the way the command did, by the
// same signal too. Its descriptors are supervise's.
func relay(extra int, how string, rest []string) int {
	ctlFD, stFD := 3+extra, 4+extra
	syscall.CloseOnExec(ctlFD)
	syscall.CloseOnExec(stFD)
	ctl, status := os.NewFile(uintptr(ctlFD), "control"), os.NewFile(uintptr(stFD), "status")
	runtime.LockOSThread() // the init dies with this thread (its Pdeathsig)
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, catchable()...)
	uid, gid, ok := ids(how)
	if !ok {
		fmt.Fprintf(status, "error 0 bad supervisor ids %q\n", how)
		return 127
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(status, "error 0 %v\n", err)
		return 127
	}
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i := range extra {
		files = append(files, os.NewFile(uintptr(3+i), "extra "+strconv.Itoa(i)))
	}
	files = append(files, ctl, w)
	argv := append([]string{os.Args[0], argMark, modeNSMirror, strconv.Itoa(extra), how}, rest...)
	child, err := os.StartProcess(exe, argv, &os.ProcAttr{Env: os.Environ(), Files: files, Sys: &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}})
	w.Close()
	if err != nil {
		fmt.Fprintf(status, "error 0 the PID namespace: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	st := &statusPipe{f: r, r: bufio.NewReader(r)}
	first := st.line()
	fmt.Fprintf(status, "%s\n", first)
	status.Close()
	if !strings.HasPrefix(first, "started ") {
		_ = child.Kill()
		_, _ = child.Wait()
		return 127
	}
	release(files[3 : 3+extra])
	ended := make(chan struct{})
	go func() {
		b := make([]byte, 1)
		for {
			if _, err := ctl.Read(b); err != nil {
				close(ended)
				return
			}
		}
	}()
	// The command's end, as the init reports it, then the init's exit.
	result := make(chan *syscall.WaitStatus, 1)
	go func() {
		var ws *syscall.WaitStatus
		for line := st.line(); line != ""; line = st.line() {
			if e := parseExit(line); strings.HasPrefix(line, "exit ") || strings.HasPrefix(line, "signal ") {
				s := waitStatus(e)
				ws = &s
			}
		}
		_, _ = child.Wait()
		result <- ws
	}()
	for {
		select {
		case ws := <-result:
			return mirror(ws)
		case <-ended: // the host is gone: so is the namespace
			_ = child.Kill()
			return mirror(<-result)
		case <-sigs:
		}
	}
}

// waitStatus encodes e as a wait status (for mirror).
func waitStatus(e Exit) syscall.WaitStatus {
	if e.Signal != 0 {
		return syscall.WaitStatus(uint32(e.Signal) & 0x7f)
	}
	return syscall.WaitStatus(uint32(e.Code&0xff) << 8)
}

// ids reads "ns:UID:GID".
func ids(how string) (uid, gid int, ok bool) {
	f := strings.Split(how, ":")
	if len(f) != 3 {
		return 0, 0, false
	}
	uid, err1 := strconv.Atoi(f[1])
	gid, err2 := strconv.Atoi(f[2])
	return uid, gid, err1 == nil && err2 == nil
}

// nestedFailure reports whether a start failed for want of a nested user
// namespace (rather than because of the program).
func nestedFailure(err error) bool {
	for _, e := range []syscall.Errno{syscall.EPERM, syscall.ENOSPC, syscall.EUSERS, syscall.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// ownProc gives this thread a mount namespace of its own, where /proc is
// the PID namespace's (mount propagation from the host's namespace kept:
// a later mount there still shows here). It may fail (a /proc partly
// covered, as in some containers, cannot be mounted anew): the command
// then sees the host's /proc.
func ownProc() error {
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return err
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SLAVE, ""); err != nil {
		return err
	}
	return syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
}

// dropCapabilities empties this thread's bounding, inheritable and
// ambient sets, so that what it starts has no capability in this user
// namespace, even should it run as root here (when no nested user
// namespace could be made).
func dropCapabilities() {
	for c := 0; c < 64; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_CAPBSET_DROP, uintptr(c), 0); e == syscall.EINVAL {
			break // past the last capability
		}
	}
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClear, 0, 0, 0, 0)
	type header struct {
		version uint32
		pid     int32
	}
	type data struct{ effective, permitted, inheritable uint32 }
	h := header{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var d [2]data
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return
	}
	d[0].inheritable, d[1].inheritable = 0, 0
	_, _, _ = syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
}

// catchable are the signals a supervisor catches: every one but SIGKILL,
// SIGSTOP and those it was started with ignored.
func catchable() []os.Signal {
	var catch []os.Signal
	for n := 1; n < 65; n++ {
		if s := syscall.Signal(n); s != syscall.SIGKILL && s != syscall.SIGSTOP && !signal.Ignored(s) {
			catch = append(catch, s)
		}
	}
	return catch
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
func report(ws *syscall.WaitStatus) string {
	if ws == nil {
		return "signal 9"
	}
	if ws.Signaled() {
		return "signal " + strconv.Itoa(int(ws.Signal()))
	}
	return "exit " + strconv.Itoa(ws.ExitStatus())
}

// mirror ends the supervisor the way the command ended: with its exit
// code, or killed by its signal.
func mirror(ws *syscall.WaitStatus) int {
	if ws == nil {
		dieBy(syscall.SIGKILL)
	}
	if ws.Signaled() {
		dieBy(ws.Signal())
	}
	return ws.ExitStatus()
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
	// Unblocked: the Go runtime may run this thread with it blocked.
	var set [16]byte
	set[(sig-1)/8] |= 1 << ((sig - 1) % 8)
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 1 /* SIG_UNBLOCK */, uintptr(unsafe.Pointer(&set[0])), 0, 8, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Second)
	syscall.Exit(128 + int(sig))
}

// killTree SIGKILLs every descendant of root, again and again, until none
// is left alive (or a few seconds passed), and reaps what it can. Orphans
// come to a subreaper, so the tree cannot slip away by reparenting.
func killTree(root int) {
	deadline := time.Now().Add(5 * time.Second)
	// A process killed is gone within a millisecond or so: look again
	// soon, then less often.
	pause := time.Millisecond
	for time.Now().Before(deadline) {
		alive := 0
		for _, pid := range descendants(root) {
			if _, state, ok := stat(pid); ok && state != "Z" {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				alive++
			}
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
