package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/bindrules"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

func init() {
	register(command{name: "replay", summary: "play one side of a recorded session against an implementation", run: runReplay})
}

const replaySynopsis = `[flags] FILE -- COMMAND ARGS...

Reads a recorded session (FILE: a trace, trace --out's JSONL; a session
store, trace --store's; a recording; or the protocol's own NDJSON, a tee
log of both sides), starts COMMAND in a process group of its own
and plays one side of the session to it: by default the traced command's
peer (--side peer: COMMAND stands in for the traced command); with --side
traced, the traced command itself (COMMAND stands in for its peer); or the
side a role names (--side client, agent, host, runtime, harness). The frames COMMAND sends back are compared,
structurally, with those recorded, and every difference is reported with
the frame's line in FILE (its seq in a store), its method and the JSON
pointer where it differs.

Ids are mapped: requests replay sends keep their recorded ids, and its
replies to COMMAND's requests carry COMMAND's live ids. Values COMMAND
chooses (session ids, tool call ids, UUIDs) are bound on first sight and
must then stay consistent; times and durations are ignored. These rules
are listed by --rules and replaced with --no-default-rules, --ignore and
--bind; a rule is KIND [METHOD] POINTER, where POINTER's segments may be
* (one member or index) or ** (any number), e.g. 'ignore session/update
/params/update/_meta' or 'bind **/sessionId'.

Exit status: 0 when COMMAND answered as recorded, 1 when it differed (or
could not be started, or the recording cannot be replayed), 2 for a usage
error.

Flags:`

type replayFlags struct {
	side, session  string
	json           *jsonOutput
	listRules      bool
	noDefaults     bool
	ignore, bind   stringList
	wait, deadline time.Duration
	maxDiffs       int
	passStderr     bool
}

func runReplay(ctx context.Context, env *Env, args []string) int {
	var rf replayFlags
	fs := newFlags(env, "replay", replaySynopsis)
	fs.StringVar(&rf.side, "side", "peer", usageOf("side", "peer (the traced command's peer: COMMAND stands in for the traced command), traced (the traced command: COMMAND stands in for its peer), or a role of the session's catalogue: client or agent (ACP), host or runtime (Harn), client or harness (AgentPM)"))
	fs.StringVar(&rf.session, "session", "", usageOf("session", "the session of FILE to replay (default: a JSONL file's first, a store's newest)"))
	rf.json = addJSON(fs, "the result: its differences and counts")
	fs.BoolVar(&rf.listRules, "rules", false, "print the comparison rules in effect and exit")
	fs.BoolVar(&rf.noDefaults, "no-default-rules", false, "start from no rules instead of the default ones (see --rules)")
	fs.Var(&rf.ignore, "ignore", "ignore members matching `[METHOD] POINTER` (repeatable)")
	fs.Var(&rf.bind, "bind", "bind members matching `[METHOD] POINTER`: values COMMAND chooses (repeatable)")
	fs.DurationVar(&rf.wait, "wait", 10*time.Second, "how long to wait for a frame COMMAND sent in the recording before going on without it")
	fs.DurationVar(&rf.deadline, "deadline", 5*time.Minute, usageOf("deadline", "the whole replay"))
	fs.IntVar(&rf.maxDiffs, "max-diffs", 100, "report at most `N` differences")
	fs.BoolVar(&rf.passStderr, "stderr", false, usageOf("stderr", "COMMAND's (default: keep its end for errors)"))
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	var rules []replayRule
	var specs []string
	if !rf.noDefaults {
		specs = append(specs, defaultReplayRules...)
	}
	for _, p := range rf.ignore {
		specs = append(specs, "ignore "+p)
	}
	for _, p := range rf.bind {
		specs = append(specs, "bind "+p)
	}
	for _, s := range specs {
		r, err := parseReplayRule(s)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit replay: %v\n", err)
			return 2
		}
		rules = append(rules, r)
	}
	if rf.listRules {
		for _, r := range rules {
			fmt.Fprintln(env.Stdout, r.String())
		}
		return 0
	}
	rest := fs.Args()
	if len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1:1], rest[2:]...)
	}
	if len(rest) < 2 {
		fmt.Fprintln(env.Stderr, "bridgekit replay: want FILE -- COMMAND ARGS...")
		fs.Usage()
		return 2
	}
	if rf.wait <= 0 || rf.deadline < 0 || rf.maxDiffs <= 0 {
		fmt.Fprintln(env.Stderr, "bridgekit replay: --wait and --max-diffs must be positive, --deadline not negative")
		return 2
	}
	file, argv := rest[0], rest[1:]
	sess, err := loadReplaySession(ctx, file, rf.session)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit replay: %v\n", err)
		return 1
	}
	play, err := sess.playDirection(rf.side)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit replay: %v\n", err)
		return 2
	}
	if rf.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rf.deadline)
		defer cancel()
	}
	rp := &replayer{sess: sess, play: play, rules: newReplayRules(rules), wait: rf.wait, max: rf.maxDiffs,
		red: redact.FromEnv(os.Environ()), file: file, log: env.Stderr, progress: env.Terminal}
	if rf.passStderr {
		rp.stderr = env.Stderr
	}
	res, err := rp.run(ctx, argv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit replay: %v\n", err)
		return 1
	}
	if rf.json.wanted() {
		b, _ := json.MarshalIndent(res, "", "  ")
		w, closeFile, err := rf.json.open(env.Stdout)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit replay: %v\n", err)
			return 1
		}
		_, werr := w.Write(append(b, '\n'))
		if err := closeFile(); werr == nil {
			werr = err
		}
		if werr != nil {
			fmt.Fprintf(env.Stderr, "bridgekit replay: --json-out: %v\n", werr)
			return 1
		}
	}
	if !rf.json.stdout {
		for _, d := range res.Differences {
			fmt.Fprintln(env.Stdout, d.text(file))
		}
		if res.Dropped > 0 {
			fmt.Fprintf(env.Stdout, "... and %d more differences\n", res.Dropped)
		}
		fmt.Fprintln(env.Stdout, res.summary())
		if len(res.Differences) > 0 && res.Stderr != "" && !rf.passStderr {
			fmt.Fprintf(env.Stderr, "bridgekit replay: the end of COMMAND's stderr:\n%s", res.Stderr)
			if !strings.HasSuffix(res.Stderr, "\n") {
				fmt.Fprintln(env.Stderr)
			}
		}
	}
	if len(res.Differences) > 0 {
		return 1
	}
	return 0
}

// replaySession is one recorded session.
type replaySession struct {
	id      string
	command []string
	family  frames.Family
	frames  []*rframe
	end     *tracelog.Record
}

// rframe is one recorded frame, and for one COMMAND sent, what it was
// matched with.
type rframe struct {
	line, seq           int64
	dir                 frames.Direction
	kind                frames.Kind
	method, qualifier   string
	id                  string // raw JSON
	replyTo             int64
	raw                 []byte
	redacted, truncated bool
	partial             bool

	matched *liveFrame
	// givenUp: waited for in vain for --wait; it may still come (and be
	// matched), but nothing waits for it again.
	givenUp bool
}

// errFound stops reading a file once the session wanted has ended.
var errFound = errors.New("session found")

// loadReplaySession reads the session want (or the first of a file, the
// newest of a store) of path: any form of recorded traffic (package
// traffic), whose frames are classified afresh as they are read.
func loadReplaySession(ctx context.Context, path, want string) (*replaySession, error) {
	format, err := traffic.Sniff(path)
	if err != nil {
		return nil, err
	}
	if format == traffic.Store {
		return loadStoreSession(ctx, path, want)
	}
	var s *replaySession
	err = traffic.Read(ctx, path, format, "", func(line int, rec *tracelog.Record) error {
		if s == nil {
			if rec.Type == tracelog.TypeSession && (want == "" || rec.Session == want) {
				s = &replaySession{id: rec.Session, command: rec.Command}
			}
			return nil
		}
		s.add(rec, int64(line))
		if s.end != nil {
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return nil, err
	}
	return s.check(path, want)
}

func loadStoreSession(ctx context.Context, path, want string) (*replaySession, error) {
	db, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if want == "" {
		ss, err := db.Sessions(ctx)
		if err != nil {
			return nil, err
		}
		if len(ss) > 0 {
			want = ss[0].ID
		}
	}
	recs, err := db.Records(ctx, want, -1, 0)
	if err != nil {
		return nil, err
	}
	var s *replaySession
	for _, rec := range recs {
		if s == nil {
			if rec.Type == tracelog.TypeSession {
				s = &replaySession{id: rec.Session, command: rec.Command}
			}
			continue
		}
		s.add(rec, 0)
	}
	return s.check(path, want)
}

// add adds a frame or end record of the session; line is its line in the
// file (0 for a store).
func (s *replaySession) add(rec *tracelog.Record, line int64) {
	if rec.Session != s.id || s.end != nil {
		return
	}
	switch rec.Type {
	case tracelog.TypeFrame:
		s.frames = append(s.frames, &rframe{line: line, seq: rec.Seq, dir: rec.Dir, kind: rec.Kind, method: rec.Method, qualifier: rec.Qualifier,
			id: string(rec.ID), replyTo: rec.ReplyTo, raw: rec.Line(), redacted: rec.Redacted, truncated: rec.Truncated, partial: rec.Partial})
		if s.family == frames.Unknown && rec.Family != "" {
			s.family = rec.Family
		}
	case tracelog.TypeEnd:
		s.end = rec
		if rec.Family != "" {
			s.family = rec.Family
		}
	}
}

func (s *replaySession) check(path, want string) (*replaySession, error) {
	switch {
	case s == nil && want != "":
		return nil, fmt.Errorf("%s has no session %q", path, want)
	case s == nil:
		return nil, fmt.Errorf("%s has no session", path)
	case len(s.frames) == 0:
		return nil, fmt.Errorf("%s: session %s has no frames", path, s.id)
	}
	return s, nil
}

// playDirection returns the direction of the frames to play for --side:
// peer (what went in to the traced command), traced (what it sent), or a
// role, told by the catalogue's sender and receiver of the session's
// requests and notifications (ACP's client and agent, Harn's host and vm,
// ...). The old names in and out, read backwards as often as not, are
// refused with the new ones.
func (s *replaySession) playDirection(side string) (frames.Direction, error) {
	switch side {
	case "", "peer":
		return frames.In, nil
	case "traced":
		return frames.Out, nil
	case "in":
		return "", errors.New("--side in is now --side peer: play what the traced command's peer sent it, COMMAND standing in for the traced command")
	case "out":
		return "", errors.New("--side out is now --side traced: play what the traced command sent, COMMAND standing in for its peer")
	}
	roles := map[string]frames.Direction{} // role -> the direction of what it sends
	for _, f := range s.frames {
		if f.kind != frames.Request && f.kind != frames.Notification {
			continue
		}
		m := frames.Lookup(s.family, f.method, f.qualifier)
		if m == nil {
			continue
		}
		for role, dir := range map[string]frames.Direction{m.Info.From: f.dir, m.Info.To: f.dir.Opposite()} {
			if role == "" {
				continue
			}
			if d, ok := roles[role]; ok && d != dir {
				return "", fmt.Errorf("--side %q: the session has %s on both sides; give peer or traced", side, role)
			}
			roles[role] = dir
		}
	}
	// Harn's stream carries ACP: its host is ACP's client, its vm (the
	// runtime) ACP's agent.
	for alias, role := range map[string]string{"runtime": "vm", "client": "host", "agent": "vm"} {
		if d, ok := roles[role]; ok && s.family == frames.Harn {
			if _, taken := roles[alias]; !taken {
				roles[alias] = d
			}
		}
	}
	if d, ok := roles[side]; ok {
		return d, nil
	}
	if len(roles) == 0 {
		return "", fmt.Errorf("--side %q: the session has no request of its catalogue to tell the sides by; give peer or traced", side)
	}
	return "", fmt.Errorf("--side %q: this %s session's sides are peer, traced, %s", side, s.family, strings.Join(sortedKeys(roles), ", "))
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// liveFrame is a frame COMMAND sent in this replay.
type liveFrame struct {
	kind   frames.Kind
	method string
	id     string
	raw    []byte
}

// replayDiff is one difference.
type replayDiff struct {
	Line     int64  `json:"line,omitempty"` // the recorded frame's line in FILE
	Seq      int64  `json:"seq,omitempty"`
	Kind     string `json:"kind"` // differs, missing, unexpected, not_sent, exit
	Method   string `json:"method,omitempty"`
	Frame    string `json:"frame,omitempty"` // request, notification, response, error
	Pointer  string `json:"pointer,omitempty"`
	Recorded string `json:"recorded,omitempty"`
	Live     string `json:"live,omitempty"`
	Message  string `json:"message,omitempty"`
}

func (d replayDiff) text(file string) string {
	var b strings.Builder
	switch {
	case d.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", file, d.Line)
	case d.Seq > 0: // a frame of a store
		fmt.Fprintf(&b, "%s: seq %d: ", file, d.Seq)
	default:
		fmt.Fprintf(&b, "%s: ", file)
	}
	if d.Method != "" {
		b.WriteString(d.Method + " ")
	}
	if d.Frame != "" {
		b.WriteString(d.Frame + " ")
	}
	if d.Pointer != "" {
		b.WriteString(d.Pointer + " ")
	}
	b.WriteString(d.Message)
	return b.String()
}

type replayResult struct {
	Session     string           `json:"session"`
	Command     []string         `json:"command"`
	Played      frames.Direction `json:"played"`
	Sent        int              `json:"sent"`
	Compared    int              `json:"compared"`
	Differences []replayDiff     `json:"differences"`
	Dropped     int              `json:"dropped,omitempty"`
	Status      int              `json:"status"`
	// Stderr is the end of COMMAND's stderr (4 KiB), masked.
	Stderr string   `json:"stderr,omitempty"`
	Rules  []string `json:"rules"`
}

func (r *replayResult) summary() string {
	n := len(r.Differences) + r.Dropped
	what := "no differences"
	if n == 1 {
		what = "1 difference"
	} else if n > 1 {
		what = fmt.Sprintf("%d differences", n)
	}
	return fmt.Sprintf("replay of session %s: %s (%d frames sent, %d compared)", r.Session, what, r.Sent, r.Compared)
}

// replayer runs one replay.
type replayer struct {
	sess     *replaySession
	play     frames.Direction
	rules    *replayRules
	wait     time.Duration
	max      int
	red      *redact.Redactor
	file     string
	log      io.Writer
	stderr   io.Writer
	progress bool

	res replayResult
	cls *frames.Classifier
	seq int64
	// low: every frame before it that COMMAND sent has come or was given up
	low   int
	bySeq map[int64]*rframe
	// expected frames not yet matched, by what matches them
	byMethod   map[string][]*rframe // kind+" "+method -> frames in order
	byReply    map[string][]*rframe // raw id -> recorded replies to replay's requests
	invalid    []*rframe
	unexpected []*liveFrame

	// the live frames COMMAND sent, filled by the reading goroutine
	mu      sync.Mutex
	queue   [][]byte
	qbytes  int
	readErr error
	eof     bool // COMMAND's stdout has ended
	notify  chan struct{}
}

// maxLiveQueue bounds the bytes of COMMAND's frames read and not yet
// compared.
const maxLiveQueue = 256 << 20

func (rp *replayer) run(ctx context.Context, argv []string) (*replayResult, error) {
	rp.res = replayResult{Session: rp.sess.id, Command: argv, Played: rp.play, Differences: []replayDiff{}}
	rp.res.Rules = append(rp.res.Rules, rp.rules.Strings()...)
	for _, f := range rp.sess.frames {
		if f.dir == rp.play && f.truncated {
			return nil, fmt.Errorf("%s:%d: the frame was recorded truncated (trace --max-record): it cannot be replayed", rp.file, f.line)
		}
		if f.dir == rp.play && f.redacted {
			fmt.Fprintf(rp.log, "bridgekit replay: %s:%d: the frame was recorded with secrets masked: it is sent as recorded\n", rp.file, f.line)
		}
	}
	rp.byMethod, rp.byReply, rp.bySeq = map[string][]*rframe{}, map[string][]*rframe{}, map[int64]*rframe{}
	for _, f := range rp.sess.frames {
		rp.bySeq[f.seq] = f
		if f.dir == rp.play {
			continue
		}
		if f.truncated && !matchable(f.kind) {
			// Only a start that does not say what it is was recorded.
			f.givenUp = true
			continue
		}
		switch f.kind {
		case frames.Request, frames.Notification:
			k := string(f.kind) + " " + f.method
			rp.byMethod[k] = append(rp.byMethod[k], f)
		case frames.Response, frames.Error:
			rp.byReply[f.id] = append(rp.byReply[f.id], f)
		default:
			rp.invalid = append(rp.invalid, f)
		}
	}
	rp.cls = frames.New(rp.sess.family)

	cmd := exec.Command(argv[0], argv[1:]...)
	proc, err := child.Spawn(cmd, child.Spec{Group: true, Stderr: rp.stderr, StderrTail: 4 << 10, WaitDelay: time.Second})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	rp.notify = make(chan struct{}, 1)
	readDone := make(chan struct{})
	go rp.read(proc.Stdout, readDone)
	// stop ends COMMAND's group and the reading: a process that left the
	// group may hold its stdout open, so after a second the pipe is closed.
	var once sync.Once
	stop := func() {
		once.Do(func() {
			proc.Stop(replayGrace)
			select {
			case <-readDone:
			case <-time.After(time.Second):
				proc.Stdout.Close()
				<-readDone
			}
		})
	}
	defer stop()

	for i, f := range rp.sess.frames {
		if f.dir != rp.play {
			continue
		}
		if err := rp.until(ctx, proc, i); err != nil {
			return nil, err
		}
		if err := rp.send(proc.Stdin, f); err != nil {
			if errors.Is(err, errStopped) {
				break
			}
			return nil, err
		}
	}
	// What COMMAND sent last in the recording, then its end of input.
	if err := rp.until(ctx, proc, len(rp.sess.frames)); err != nil {
		return nil, err
	}
	proc.Stdin.Close()
	select {
	case <-proc.Exited():
	case <-time.After(rp.wait):
	case <-ctx.Done():
	}
	stop()
	rp.drain()
	for _, f := range rp.sess.frames {
		if f.dir != rp.play && f.matched == nil && (!f.truncated || matchable(f.kind)) {
			rp.diff(replayDiff{Line: f.line, Seq: f.seq, Kind: "missing", Method: f.method, Frame: string(f.kind),
				Message: "was not sent: " + rp.quote(f.raw)})
		}
	}
	for _, lf := range rp.unexpected {
		rp.diff(replayDiff{Kind: "unexpected", Method: lf.method, Frame: string(lf.kind),
			Message: "not in the recording: " + rp.quote(lf.raw)})
	}
	if rp.progress && rp.res.Sent > 0 {
		fmt.Fprintln(rp.log)
	}
	status, sig := exitStatus(cmd.ProcessState, proc.Err())
	rp.res.Status = status
	rp.res.Stderr = rp.red.String(proc.Stderr())
	if e := rp.sess.end; e != nil && e.Status != nil && e.Signal == "" {
		switch {
		case sig != "":
			rp.diff(replayDiff{Kind: "exit", Message: fmt.Sprintf("ended by %s, recorded exit status %d", sig, *e.Status)})
		case status != *e.Status:
			rp.diff(replayDiff{Kind: "exit", Message: fmt.Sprintf("exit status %d, recorded %d", status, *e.Status)})
		}
	}
	if rp.readErr != nil {
		return nil, fmt.Errorf("reading COMMAND's output: %w", rp.readErr)
	}
	// In the recording's order; what it lacks (seq 0) last.
	slices.SortStableFunc(rp.res.Differences, func(a, b replayDiff) int {
		switch {
		case a.Seq == b.Seq:
			return 0
		case a.Seq == 0:
			return 1
		case b.Seq == 0:
			return -1
		}
		return int(a.Seq - b.Seq)
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("the replay did not end within --timeout: %w", err)
	}
	return &rp.res, nil
}

// replayGrace is how long COMMAND has to exit after its input ends (and
// again after SIGTERM) before it is killed.
const replayGrace = 3 * time.Second

var errStopped = errors.New("COMMAND stopped reading")

// read reads COMMAND's frames into the queue until its stdout ends.
func (rp *replayer) read(r io.Reader, done chan<- struct{}) {
	defer close(done)
	rd := ndjson.NewReader(r, tracelog.MaxRecord)
	for {
		line, err := rd.ReadFrame()
		rp.mu.Lock()
		if err == nil {
			if rp.qbytes+len(line) > maxLiveQueue {
				err = fmt.Errorf("COMMAND sent more than %d bytes ahead of the replay", maxLiveQueue)
			} else {
				rp.queue = append(rp.queue, bytes.Clone(line))
				rp.qbytes += len(line)
			}
		}
		if err != nil {
			var tl *ndjson.FrameTooLargeError
			if errors.As(err, &tl) {
				rp.queue = append(rp.queue, bytes.Clone(tl.Head))
				rp.mu.Unlock()
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				rp.readErr = err
			}
			rp.eof = true
			rp.mu.Unlock()
			select {
			case rp.notify <- struct{}{}:
			default:
			}
			return
		}
		rp.mu.Unlock()
		select {
		case rp.notify <- struct{}{}:
		default:
		}
	}
}

// until handles COMMAND's frames as they come until every frame it sent
// before the i'th recorded frame has come, or no frame has come for
// --wait (those still missing are then given up), or its output ends.
func (rp *replayer) until(ctx context.Context, proc *child.Process, i int) error {
	timer := time.NewTimer(rp.wait)
	defer timer.Stop()
	for {
		if rp.drain() > 0 {
			timer.Reset(rp.wait)
		}
		if rp.expectedBefore(i) == nil {
			return nil
		}
		rp.mu.Lock()
		ended := rp.readErr != nil || rp.eof && len(rp.queue) == 0
		rp.mu.Unlock()
		if ended {
			return nil
		}
		select {
		case <-rp.notify:
		case <-timer.C:
			for f := rp.expectedBefore(i); f != nil; f = rp.expectedBefore(i) {
				if rp.progress {
					fmt.Fprintf(rp.log, "\nbridgekit replay: %s:%d: nothing for %s; going on without it\n", rp.file, f.line, rp.wait)
				}
				f.givenUp = true
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("the replay did not end within --timeout: %w", ctx.Err())
		}
	}
}

// expectedBefore returns the first frame COMMAND sent before the i'th
// recorded frame that has not been matched yet, or nil.
func (rp *replayer) expectedBefore(i int) *rframe {
	for ; rp.low < i; rp.low++ {
		if f := rp.sess.frames[rp.low]; f.dir != rp.play && f.matched == nil && !f.givenUp {
			return f
		}
	}
	return nil
}

// drain handles the frames read so far and returns how many there were.
func (rp *replayer) drain() int {
	rp.mu.Lock()
	q := rp.queue
	rp.queue, rp.qbytes = nil, 0
	rp.mu.Unlock()
	for _, line := range q {
		rp.received(line)
	}
	return len(q)
}

// send sends one recorded frame of the played side.
func (rp *replayer) send(w *os.File, f *rframe) error {
	var id []byte
	if f.kind == frames.Response || f.kind == frames.Error {
		req := rp.bySeq[f.replyTo]
		if req == nil || req.matched == nil {
			rp.diff(replayDiff{Line: f.line, Seq: f.seq, Kind: "not_sent", Method: f.method, Frame: string(f.kind),
				Message: "not sent: COMMAND never sent the request it answers"})
			return nil
		}
		id = []byte(req.matched.id)
	}
	line := f.raw
	if f.kind != frames.Invalid {
		var err error
		if line, err = rp.rules.Rewrite(f.method, f.raw, id); err != nil {
			line = f.raw // not JSON after all: send it as recorded
		}
	}
	buf := append(bytes.Clone(line), '\n')
	if f.partial {
		buf = buf[:len(buf)-1]
	}
	rp.seq++
	rp.cls.Classify(rp.seq, rp.play, time.Now(), line, false)
	_ = w.SetWriteDeadline(time.Now().Add(rp.wait))
	if _, err := w.Write(buf); err != nil {
		rp.diff(replayDiff{Line: f.line, Seq: f.seq, Kind: "not_sent", Method: f.method, Frame: string(f.kind),
			Message: "COMMAND did not read it: " + err.Error()})
		return errStopped
	}
	rp.res.Sent++
	if rp.progress {
		fmt.Fprintf(rp.log, "\rbridgekit replay: %d frames sent", rp.res.Sent)
	}
	return nil
}

// received matches a frame COMMAND sent with the recorded one it stands
// for, and compares them.
func (rp *replayer) received(line []byte) {
	rp.seq++
	fr := rp.cls.Classify(rp.seq, rp.play.Opposite(), time.Now(), line, false)
	lf := &liveFrame{kind: fr.Kind, method: fr.Method, id: fr.ID, raw: line}
	var rec *rframe
	switch lf.kind {
	case frames.Request, frames.Notification:
		rec = pop(rp.byMethod, string(lf.kind)+" "+lf.method)
	case frames.Response, frames.Error:
		rec = pop(rp.byReply, lf.id)
	default:
		if len(rp.invalid) > 0 {
			rec, rp.invalid = rp.invalid[0], rp.invalid[1:]
		}
	}
	if rec == nil {
		rp.unexpected = append(rp.unexpected, lf)
		return
	}
	rec.matched = lf
	rp.res.Compared++
	rp.compareFrames(rec, lf)
}

func pop(m map[string][]*rframe, k string) *rframe {
	q := m[k]
	if len(q) == 0 {
		return nil
	}
	m[k] = q[1:]
	return q[0]
}

// matchable reports whether a recorded frame of kind k is matched by its
// method or id, which trace records even for a truncated frame whose start
// shows them.
func matchable(k frames.Kind) bool {
	return k == frames.Request || k == frames.Notification || k == frames.Response || k == frames.Error
}

// compareFrames reports where lf differs from rec.
func (rp *replayer) compareFrames(rec *rframe, lf *liveFrame) {
	if rec.truncated {
		return // only its start was recorded
	}
	live := lf.raw
	if rec.redacted {
		live = rp.red.JSON(live) // as trace masks what it records
	}
	base := replayDiff{Line: rec.line, Seq: rec.seq, Kind: "differs", Method: rec.method, Frame: string(rec.kind)}
	if rec.kind != lf.kind {
		d := base
		d.Message = fmt.Sprintf("is a %s, recorded a %s: %s", lf.kind, rec.kind, rp.quote(live))
		rp.diff(d)
		return
	}
	rv, rerr := decodeGeneric(rec.raw)
	lv, lerr := decodeGeneric(live)
	if rerr != nil || lerr != nil {
		if !bytes.Equal(rec.raw, live) {
			d := base
			d.Recorded, d.Live = rp.quote(rec.raw), rp.quote(live)
			d.Message = "recorded " + d.Recorded + ", got " + d.Live
			rp.diff(d)
		}
		return
	}
	// COMMAND's own request ids are its to choose.
	if rec.kind == frames.Request {
		if ro, ok := rv.(map[string]any); ok {
			if lo, ok := lv.(map[string]any); ok {
				delete(ro, "id")
				delete(lo, "id")
			}
		}
	}
	rp.compareValues(base, rec.method, nil, rv, lv)
}

func (rp *replayer) compareValues(base replayDiff, method string, path []string, rec, live any) {
	rp.rules.Compare(method, path, rec, live, func(x bindrules.Difference) {
		d := base
		d.Pointer = pointerString(x.Path)
		switch {
		case x.Kind == bindrules.Missing:
			d.Recorded = rp.quoteValue(x.Recorded)
			d.Message = "missing (recorded " + d.Recorded + ")"
		case x.Kind == bindrules.Extra:
			d.Live = rp.quoteValue(x.Live)
			d.Message = "not in the recording: " + d.Live
		case x.Message != "":
			d.Message = x.Message
		default:
			d.Recorded, d.Live = rp.quoteValue(x.Recorded), rp.quoteValue(x.Live)
			d.Message = "recorded " + d.Recorded + ", got " + d.Live
		}
		rp.diff(d)
	})
}

func (rp *replayer) diff(d replayDiff) {
	if len(rp.res.Differences) >= rp.max {
		rp.res.Dropped++
		return
	}
	rp.res.Differences = append(rp.res.Differences, d)
}

// quote shows a frame or value, masked and cut to a readable length.
func (rp *replayer) quote(b []byte) string {
	s := rp.red.String(string(rp.red.JSON(b)))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (rp *replayer) quoteValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return rp.quote(b)
}
