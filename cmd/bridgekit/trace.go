package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/syncwriter"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/validate"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

func init() {
	register(command{name: "trace", summary: "run a command behind a transparent recording proxy", run: runTrace, ownSignals: true})
}

const traceSynopsis = `[--out FILE] [--store DB] [--ui ADDR] [--pretty] -- COMMAND ARGS...

Runs COMMAND with its stdin and stdout behind a transparent proxy: every
byte passes unchanged, in order, with the pipes' own backpressure; its
stderr passes through untouched, each of its lines recorded in order with
the frames. Both directions are recorded as JSONL
(--out), in a session store (--store) and/or shown live in the inspector
(--ui) or as a transcript on stderr (--pretty): each frame with its time,
direction, protocol family, kind, method, id and, for a reply, the request
it answers and the latency. Schema violations, unmatched ids and requests
never answered are flagged. Values under secret-looking keys (and secret
environment values) are masked in what is recorded and printed, never in
what is forwarded.

SIGINT, SIGTERM and SIGHUP are forwarded to COMMAND's process group. The
exit status is COMMAND's (128+n when signal n ended it); 2 for a usage
error, 1 when COMMAND could not be started.

Flags:`

type traceFlags struct {
	out, store, ui, protocol, colour, session string
	pretty, uiRemote, uiKeep, strict          bool
	maxRecord                                 int
}

func runTrace(ctx context.Context, env *Env, args []string) int {
	var tf traceFlags
	fs := newFlags(env, "trace", traceSynopsis)
	fs.StringVar(&tf.out, "out", "", usageOf("out", "the session's (- for stdout is refused: stdout is the protocol's)"))
	fs.StringVar(&tf.store, "store", "", usageOf("store", "the SQLite session store (created if missing)"))
	fs.StringVar(&tf.ui, "ui", "", usageOf("ui", "host:port, loopback only unless --ui-allow-remote"))
	fs.BoolVar(&tf.uiRemote, "ui-allow-remote", false, usageOf("ui-allow-remote", "the inspector shows the traffic, masked, to whoever connects"))
	fs.BoolVar(&tf.uiKeep, "ui-keep", false, "keep serving --ui after COMMAND exits, until SIGINT or SIGTERM (run by a client, not at a terminal: trace exits and a process of its own keeps the page)")
	fs.BoolVar(&tf.pretty, "pretty", false, "print a readable transcript on stderr")
	fs.StringVar(&tf.colour, "color", "auto", "colour the transcript: auto (on a terminal), always or never")
	fs.StringVar(&tf.protocol, "protocol", "", usageOf("protocol", strings.Join(validate.Protocols, ", ")+" (default: told from the traffic; acp-v0.12.2, the ACP Harn pins, is never told apart from v1: it judges each frame by ACP v0.12.2's schema too)"))
	fs.StringVar(&tf.session, "session", "", usageOf("session", "the one the recorded session gets (default: a new random one)"))
	fs.BoolVar(&tf.strict, "strict", false, usageOf("strict", "enum values and union variants this version does not know are recorded as problems, not notes"))
	fs.IntVar(&tf.maxRecord, "max-record", 1<<20, "record at most `BYTES` of a line; a longer one passes whole but is recorded truncated, with its length")
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(env.Stderr, "bridgekit trace: no COMMAND to run (put it after --)")
		fs.Usage()
		return 2
	}
	family := frames.Family(tf.protocol)
	if tf.protocol == "acp-v0.12.2" {
		family = frames.ACP
	}
	if tf.protocol != "" && !validFamily(family) {
		fmt.Fprintf(env.Stderr, "bridgekit trace: unknown --protocol %q (%s)\n", tf.protocol, strings.Join(validate.Protocols, ", "))
		return 2
	}
	if tf.colour != "auto" && tf.colour != "always" && tf.colour != "never" {
		fmt.Fprintf(env.Stderr, "bridgekit trace: --color must be auto, always or never\n")
		return 2
	}
	if tf.maxRecord < 1024 {
		fmt.Fprintf(env.Stderr, "bridgekit trace: --max-record must be at least 1024\n")
		return 2
	}
	if tf.ui != "" {
		if err := checkListenAddr(tf.ui, tf.uiRemote); err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit trace: --ui: %v\n", err)
			return 2
		}
	}
	if tf.session == "" {
		tf.session = newSessionID()
	}
	return traceSession(ctx, env, tf, family, argv)
}

// The recording queue's bounds: how far recording may lag behind
// forwarding before the pumps wait for it.
const (
	recordQueueBytes = 16 << 20
	recordQueueLines = 16384
)

func validFamily(f frames.Family) bool {
	for _, k := range frames.Families {
		if k == f {
			return true
		}
	}
	return false
}

func newSessionID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

func traceSession(ctx context.Context, env *Env, tf traceFlags, family frames.Family, argv []string) int {
	if _, ok := env.Stderr.(*os.File); !ok {
		// The child's stderr is copied by a goroutine of os/exec, the
		// transcript written by the pumps: one writer must not race them.
		e := *env
		e.Stderr = syncwriter.New(env.Stderr)
		env = &e
	}
	rec := &recorder{session: tf.session, cls: frames.New(family), red: redact.FromEnv(os.Environ())}
	if tf.protocol == "acp-v0.12.2" {
		rec.judges = newJudgePool(tf.protocol, true, tf.strict)
	} else {
		rec.judges = newJudgePool(tf.protocol, false, tf.strict)
	}
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if err := closers[i](); err != nil {
				fmt.Fprintf(env.Stderr, "bridgekit trace: %v\n", err)
			}
		}
	}()
	if tf.out != "" {
		if tf.out == "-" {
			fmt.Fprintln(env.Stderr, "bridgekit trace: --out - would mix records into the protocol's stdout; name a file")
			return 2
		}
		f, err := os.OpenFile(tf.out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit trace: %v\n", err)
			return 1
		}
		closers = append(closers, f.Close)
		rec.jsonl = bufio.NewWriterSize(f, 64<<10)
	}
	if tf.store != "" {
		st, err := openStoreSink(tf.store)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit trace: --store: %v\n", err)
			return 1
		}
		closers = append(closers, st.Close)
		rec.sinks = append(rec.sinks, st)
	}
	var ui *uiServer
	if tf.ui != "" {
		var err error
		ui, err = startLiveUI(env, tf.ui, tf.uiRemote)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit trace: --ui: %v\n", err)
			return 1
		}
		closers = append(closers, ui.Close)
		rec.sinks = append(rec.sinks, ui)
	}
	if tf.pretty {
		colour := tf.colour == "always" || tf.colour == "auto" && env.Terminal
		rec.pretty = newPrettyPrinter(env.Stderr, colour)
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The command's stderr passes through as it comes, and each of its
	// lines is recorded (a stderr record) in order with the frames.
	errR, errW, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit trace: %v\n", err)
		return 1
	}
	cmd.Stderr = errW
	// Pipes of our own, not StdinPipe/StdoutPipe: Wait must not close the
	// stdout pipe before the pump has read everything the command wrote.
	inR, childIn, err := os.Pipe()
	if err != nil {
		errR.Close()
		errW.Close()
		fmt.Fprintf(env.Stderr, "bridgekit trace: %v\n", err)
		return 1
	}
	childOut, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		childIn.Close()
		errR.Close()
		errW.Close()
		fmt.Fprintf(env.Stderr, "bridgekit trace: %v\n", err)
		return 1
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	// A write to a stdout the peer closed must fail with EPIPE, not kill
	// this process before it records the end of the session. (A handler,
	// unlike SIG_IGN, is not inherited by the child.)
	pipeSig := make(chan os.Signal, 1)
	signal.Notify(pipeSig, syscall.SIGPIPE)
	defer signal.Stop(pipeSig)

	rec.start(time.Now(), argv)
	rec.queue = newLineQueue(recordQueueBytes, recordQueueLines)
	recorded := make(chan struct{})
	go rec.runQueue(rec.queue, recorded)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		childIn.Close()
		childOut.Close()
		errR.Close()
		fmt.Fprintf(env.Stderr, "bridgekit trace: %v\n", err)
		rec.queue.close()
		<-recorded
		rec.end(time.Now(), 127, "")
		return 1
	}
	pgid := cmd.Process.Pid

	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		if err := pump(env.Stdout, childOut, &tap{dir: frames.Out, rec: rec, max: tf.maxRecord}); err != nil {
			// Our stdout failed: stop reading, so the command sees EPIPE.
			childOut.Close()
		}
	}()
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		pump(alwaysWrites{env.Stderr}, errR, &tap{dir: dirStderr, rec: rec, max: tf.maxRecord})
		errR.Close()
	}()
	// The stdin pump is not waited for: once the command has exited, a
	// peer that never closes our stdin must not keep trace running.
	go func() {
		pump(childIn, env.Stdin, &tap{dir: frames.In, rec: rec, max: tf.maxRecord})
		childIn.Close()
	}()

	waited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(waited)
	}()

	var sigs <-chan os.Signal = env.Signals
	ctxDone := ctx.Done()
loop:
	for {
		select {
		case s := <-sigs:
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(-pgid, sig)
			}
		case <-ctxDone:
			// The caller gave up (an in-process caller; the command-line
			// forwards signals instead): end the command's group.
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			ctxDone = nil
			go func() {
				select {
				case <-waited:
				case <-time.After(5 * time.Second):
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
			}()
		case <-waited:
			break loop
		}
	}
	// The command has exited; what it wrote before is in the pipe. A
	// grandchild may hold the pipe open: give the pump a moment, then stop.
	grace := make(chan struct{})
	graceTimer := time.AfterFunc(time.Second, func() { close(grace) })
	defer graceTimer.Stop()
	select {
	case <-outDone:
	case <-grace:
		childOut.Close()
		<-outDone
	}
	select {
	case <-errDone:
	case <-grace:
		errR.Close()
		<-errDone
	}
	status, sigName := exitStatus(cmd.ProcessState, waitErr)
	endAt := time.Now()
	// The stdin pump may still push (a peer writing after the command
	// exited, into a pipe nobody reads): what is queued now is recorded,
	// later lines are not waited for.
	rec.queue.close()
	<-recorded
	rec.end(endAt, status, sigName)
	if tf.ui != "" && tf.uiKeep {
		keepUI(ctx, env, ui, tf.uiRemote, sigs)
	}
	for _, err := range rec.failures {
		fmt.Fprintf(env.Stderr, "bridgekit trace: recording: %v\n", err)
	}
	return status
}

func exitStatus(ps *os.ProcessState, err error) (int, string) {
	if ps == nil {
		return 1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	if code := ps.ExitCode(); code >= 0 {
		return code, ""
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return 1, ""
	}
	return 1, ""
}
