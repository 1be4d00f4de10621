package proctest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// roleVar makes a test binary one of the attacker's processes (RunRole).
const roleVar = "BRIDGEKIT_PROCTEST_ROLE"

// AttackEnv is the environment entry that makes a test binary, started
// with it, run the red team's attack on containment (issue 33) from its
// TestMain (RunRole):
//
//  1. it starts a daemon in a session of its own (setsid), out of every
//     process group the host knows;
//  2. it starts a process in a group of its own whose child joins the
//     group of its parent, the supervisor, so that the group is not
//     orphaned when the supervisor's own parent goes (the kernel's SIGHUP
//     and SIGCONT of an orphaned group with a stopped member never come);
//  3. it sends SIGSTOP to its parent, the supervisor that was to kill all
//     of them;
//  4. it prints "attacked" (on stdout and stderr) and sleeps, or with
//     "eof" closes its stdout and stdin too (a runtime ending its
//     session), and sleeps.
//
// Each of its processes carries the test's Mark when the binary was
// started with one, so that MarkedGone finds them all.
const AttackEnv = roleVar + "=attack"

// AttackEOFEnv is AttackEnv that then ends its output (and closes its
// input): for a host that ends the session when its runtime does.
const AttackEOFEnv = roleVar + "=attack-eof"

// RunRole runs the role the environment gives this process (AttackEnv),
// and exits; without one it returns at once. A TestMain calls it first.
//
// A helper host started with PassMark adopts the mark here: what it starts
// inherits it, while its own environment (as /proc shows it) does not
// hold it.
func RunRole() {
	if v, ok := os.LookupEnv(passVar); ok {
		os.Setenv(markVar, v)
	}
	switch os.Getenv(roleVar) {
	case "":
		return
	case "attack", "attack-eof":
		attack(os.Getenv(roleVar) == "attack-eof")
	case "sleep":
	case "bridge":
		self("joiner", &syscall.SysProcAttr{}, os.NewFile(3, "joined"), "BRIDGEKIT_PROCTEST_PGID="+os.Getenv("BRIDGEKIT_PROCTEST_PGID"))
		_ = syscall.Close(3)
	case "joiner":
		if pgid, err := strconv.Atoi(os.Getenv("BRIDGEKIT_PROCTEST_PGID")); err == nil {
			_ = syscall.Setpgid(0, pgid)
		}
		_ = syscall.Close(3) // says it has joined
	}
	// Not select {}: a program whose goroutines all block on nothing
	// dies at once ("all goroutines are asleep"); a sleep holds a timer.
	time.Sleep(RoleLife)
	os.Exit(0)
}

// RoleLife is how long a role's process (and a helper host that only
// waits) lives at most: longer than any test waits for containment to
// act, short enough that what a failed containment leaves behind, or a
// test binary killed by its -timeout before its cleanups ran, ends by
// itself. (Each attack starts four test binaries; they used to sleep an
// hour, and one run of this branch's tests left about 12,000 orphaned
// terminal.test processes behind.)
const RoleLife = 3 * time.Minute

func attack(eof bool) {
	self("sleep", &syscall.SysProcAttr{Setsid: true}, nil)
	// The joiner closes its end of this pipe once it has joined.
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	sup := os.Getppid()
	pgid, err := syscall.Getpgid(sup)
	if err != nil || pgid <= 0 {
		pgid = syscall.Getpgrp()
	}
	self("bridge", &syscall.SysProcAttr{Setpgid: true}, w, "BRIDGEKIT_PROCTEST_PGID="+strconv.Itoa(pgid))
	w.Close()
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = r.Read(make([]byte, 1))
	r.Close()
	_ = syscall.Kill(sup, syscall.SIGSTOP)
	fmt.Println("attacked")
	fmt.Fprintln(os.Stderr, "attacked")
	if eof {
		os.Stdout.Close()
		os.Stdin.Close()
	}
}

// self starts this program again in role, with attr, fd 3 (when not nil)
// and env added.
func self(role string, attr *syscall.SysProcAttr, fd3 *os.File, env ...string) {
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	null, _ := os.Open(os.DevNull)
	// The role replaces this process's own (a duplicate would be read as
	// the first: an attack starting attacks).
	own := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, roleVar+"=") || strings.HasPrefix(kv, "BRIDGEKIT_PROCTEST_PGID=")
	})
	_, _ = os.StartProcess(exe, []string{exe}, &os.ProcAttr{
		Env:   append(append(own, roleVar+"="+role), env...),
		Files: append([]*os.File{null, null, null}, fd3),
		Sys:   attr,
	})
}
