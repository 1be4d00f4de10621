//go:build linux

package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// exe is the program's own executable, as the kernel knows it (valid even
// when the file was replaced or removed since).
const exe = "/proc/self/exe"

// startTimeout bounds how long a supervisor may take to start its command.
const startTimeout = 10 * time.Second

// Available reports whether commands are started under a supervisor in
// this program: on Linux, with /proc/self/exe, in a program built as an
// executable.
var Available = sync.OnceValue(func() bool {
	if _, err := os.Stat(exe); err != nil {
		return false
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-buildmode" && s.Value != "exe" && s.Value != "pie" && s.Value != "default" {
				return false
			}
		}
	}
	return true
})

// lifeline is the control pipe of every Start: its write end is never
// written to nor closed, so its readers (the supervisors) see its end
// exactly when this program is gone.
var lifeline = sync.OnceValues(func() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	lifelineW = w // kept for the life of the program
	return r, nil
})

var lifelineW *os.File

// Start starts cmd as cmd.Start does, under a supervisor when Available
// and cmd asks for a process group of its own (SysProcAttr.Setpgid with
// Pgid 0, as internal/child.Contain sets) and for nothing else of
// SysProcAttr but Pdeathsig; otherwise it calls cmd.Start.
//
// Under a supervisor, cmd.Process is the supervisor's: it leads the
// command's process group (signal the group, as internal/child does: a
// signal sent to the supervisor alone is not passed on, but SIGKILL kills
// it and, by Pdeathsig, the command), and cmd.Wait and cmd.ProcessState
// report the command's exit, after the supervisor has killed whatever the
// command left behind. The command gets cmd's stdio and ExtraFiles
// themselves, cmd's Dir and environment; when this program ends, however
// it ends, the supervisor kills everything below it. A start that fails
// (a program that is missing or cannot be run) fails Start with the error
// cmd.Start would have returned. cmd's Path, Args, Env, ExtraFiles and
// SysProcAttr are as they were once Start returns.
func Start(cmd *exec.Cmd) error {
	if !supervisable(cmd) {
		return cmd.Start()
	}
	ctl, err := lifeline()
	if err != nil {
		return err
	}
	st, _, err := launch(cmd, modeMirror, ctl)
	if err != nil {
		return err
	}
	st.Close()
	return nil
}

// supervisable reports whether Start may put cmd under a supervisor.
func supervisable(cmd *exec.Cmd) bool {
	if !Available() || cmd.Err != nil || cmd.Process != nil || cmd.Path == "" || cmd.SysProcAttr == nil {
		return false
	}
	a := *cmd.SysProcAttr
	if !a.Setpgid || a.Pgid != 0 {
		return false
	}
	a.Setpgid, a.Pdeathsig = false, 0
	return reflect.ValueOf(a).IsZero()
}

// launch starts c's program under a supervisor in mode, with ctl (the
// read end of a control pipe) as its control pipe, and waits for the
// supervisor to have started it. It returns the status pipe, positioned
// after the supervisor's "started PID" line, and the command's PID. c is
// changed to start the supervisor and changed back before launch returns.
func launch(c *exec.Cmd, mode string, ctl *os.File) (*statusPipe, int, error) {
	stR, stW, err := os.Pipe()
	if err != nil {
		return nil, 0, err
	}
	path, args, env, extra, attr := c.Path, c.Args, c.Env, c.ExtraFiles, c.SysProcAttr
	supEnv := slices.DeleteFunc(c.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envVar+"=") })
	var supAttr syscall.SysProcAttr
	if attr != nil {
		supAttr = *attr
	}
	// The supervisor leads a group of its own; it must not die with the
	// thread that starts it (Pdeathsig): it outlives this program for as
	// long as it takes to kill the command's tree.
	supAttr.Setpgid, supAttr.Pgid, supAttr.Pdeathsig = true, 0, 0
	argv0 := path
	if len(args) > 0 {
		argv0 = args[0]
	}
	var rest []string
	if len(args) > 1 {
		rest = args[1:]
	}
	c.Path = exe
	c.Args = append([]string{argv0, argMark, mode, strconv.Itoa(len(extra)), path}, rest...)
	c.Env = append(supEnv, envVar+"=1")
	c.ExtraFiles = append(slices.Clip(extra), ctl, stW)
	c.SysProcAttr = &supAttr
	err = c.Start()
	c.Path, c.Args, c.Env, c.ExtraFiles, c.SysProcAttr = path, args, env, extra, attr
	stW.Close()
	if err != nil {
		stR.Close()
		if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == exe {
			pe.Path = path // a bad Dir: say so of the command, as cmd.Start would
		}
		return nil, 0, err
	}
	st := &statusPipe{f: stR, r: bufio.NewReader(stR)}
	// The supervisor's first report: "started PID" or "error ERRNO TEXT".
	first := make(chan string, 1)
	go func() { first <- st.line() }()
	var line string
	select {
	case line = <-first:
	case <-time.After(startTimeout):
		line = "error 0 the supervisor did not start " + path + " within " + startTimeout.String()
	}
	if rest, ok := strings.CutPrefix(line, "started "); ok {
		pid, _ := strconv.Atoi(rest)
		return st, pid, nil
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	st.Close()
	if rest, ok := strings.CutPrefix(line, "error "); ok {
		code, msg, _ := strings.Cut(rest, " ")
		if n, err := strconv.Atoi(code); err == nil && n > 0 {
			return nil, 0, &fs.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
		}
		return nil, 0, errors.New(msg)
	}
	return nil, 0, fmt.Errorf("fork/exec %s: the supervisor ended before starting it (%v)", path, c.ProcessState)
}

// statusPipe is the read end of a supervisor's status pipe.
type statusPipe struct {
	f *os.File
	r *bufio.Reader
}

// line reads one report, "" at the end of the pipe.
func (s *statusPipe) line() string {
	l, _ := s.r.ReadString('\n')
	return strings.TrimSpace(l)
}

func (s *statusPipe) Close() { s.f.Close() }
