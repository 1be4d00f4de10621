package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/syncwriter"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/validate"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

// MaxFrame is the longest line conform reads from an implementation.
const MaxFrame = 32 << 20

// maxLogBytes bounds what a peer keeps of the frames received during one
// scenario; past it the oldest frames are dropped (their problems are
// still counted).
const maxLogBytes = 64 << 20

// Received is one frame the implementation wrote.
type Received struct {
	Seq   int64 // position in the session (both directions), from 1
	Raw   []byte
	Frame frames.Frame
	// Msg is the frame decoded as a JSON-RPC message (nil when it is
	// not a JSON object).
	Msg *Message
	// Notes are the enum values and union variants in the frame that
	// this version does not know (validate.FrameJudge.Notes).
	Notes []frames.Problem
}

// Message is the members of a JSON-RPC message conform reads.
type Message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
	hasID  bool
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// IsReply says whether m is a response or an error.
func (m *Message) IsReply() bool { return m.Method == "" && m.hasID }

// Peer is one started implementation: its process, contained in a group
// of its own, and the frames it wrote.
type Peer struct {
	proc   *child.Process // nil for a peer on streams we were given (Serve)
	in     io.Writer      // the implementation's input
	out    io.Reader      // its output
	family frames.Family
	// answer answers the implementation's own requests (nil: -32601).
	answer func(rec Received) (result any, rpcErr *RPCError)
	// respond, when set, replaces answer: the whole line to write back.
	respond func(rec Received) []byte

	writeMu sync.Mutex

	mu       sync.Mutex
	cls      *frames.Classifier
	seq      int64
	log      []Received
	logBytes int
	changed  chan struct{} // closed and replaced whenever log or eof changes
	eof      bool          // the implementation's stdout ended
	readErr  error
	nextID   int64
	readDone chan struct{}
	serving  chan struct{} // a slot per request of the implementation being answered
	servers  sync.WaitGroup

	started  time.Time
	exitedAt atomic.Pointer[time.Time] // when its exit was reaped

	judge *validate.FrameJudge // made when a frame first holds an unknown
}

// notes returns the notes of f, a frame just classified (under p.mu).
func (p *Peer) notes(f frames.Frame) []frames.Problem {
	if f.Value == nil || !validate.HasUnknown(f.Value) {
		return nil
	}
	if p.judge == nil {
		v, err := validate.New(validate.Options{Protocol: string(f.Family)})
		if err != nil {
			return []frames.Problem{{Code: "conform", Message: "cannot judge the frame: " + err.Error()}}
		}
		p.judge = v.NewFrameJudge()
	}
	return p.judge.Notes(f)
}

// maxServing bounds the implementation's requests answered at once.
const maxServing = 16

// startPeer starts argv contained, with stderr kept (and copied to
// stderrCopy when set).
func startPeer(argv []string, family frames.Family, stderrCopy *syncwriter.Writer, dir string) (*Peer, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	spec := child.Spec{Group: true, StderrTail: 16 << 10}
	if stderrCopy != nil {
		spec.Stderr = stderrCopy
	}
	proc, err := child.Spawn(cmd, spec)
	if err != nil {
		return nil, err
	}
	p := &Peer{proc: proc, in: proc.Stdin, out: proc.Stdout, family: family, cls: frames.New(family), changed: make(chan struct{}), readDone: make(chan struct{}),
		serving: make(chan struct{}, maxServing), started: time.Now()}
	go p.read()
	go func() {
		<-proc.Exited()
		now := time.Now()
		p.exitedAt.Store(&now)
	}()
	return p, nil
}

// streamPeer is a peer on streams we were given: the implementation
// started us (conform as the agent of an ACP client). It reads once
// started (startReading), so that its answer can be set first.
func streamPeer(in io.Writer, out io.Reader, family frames.Family) *Peer {
	return &Peer{in: in, out: out, family: family, cls: frames.New(family), changed: make(chan struct{}), readDone: make(chan struct{}),
		serving: make(chan struct{}, maxServing)}
}

// startReading starts the reader of a streamPeer.
func (p *Peer) startReading() { go p.read() }

func (p *Peer) read() {
	defer close(p.readDone)
	r := ndjson.NewReader(p.out, MaxFrame)
	for {
		line, err := r.ReadFrame()
		if err != nil {
			var tl *ndjson.FrameTooLargeError
			if errors.As(err, &tl) {
				p.record(tl.Head, true)
				continue
			}
			p.mu.Lock()
			p.eof = true
			if !errors.Is(err, os.ErrClosed) {
				p.readErr = err
			}
			p.signal()
			p.mu.Unlock()
			return
		}
		p.record(bytes.Clone(line), false)
	}
}

func (p *Peer) record(line []byte, truncated bool) {
	p.mu.Lock()
	p.seq++
	rec := Received{Seq: p.seq, Raw: line}
	rec.Frame = p.cls.Classify(p.seq, frames.Out, time.Now(), line, truncated)
	rec.Notes = p.notes(rec.Frame)
	rec.Msg = parseMessage(line)
	p.log = append(p.log, rec)
	p.logBytes += len(line)
	for p.logBytes > maxLogBytes && len(p.log) > 1 {
		p.logBytes -= len(p.log[0].Raw)
		p.log = p.log[1:]
	}
	p.signal()
	p.mu.Unlock()
	if rec.Msg != nil && rec.Msg.Method != "" && rec.Msg.hasID && string(rec.Msg.ID) != "null" {
		select {
		case p.serving <- struct{}{}:
			p.servers.Add(1)
			go func() {
				defer func() { <-p.serving; p.servers.Done() }()
				p.serve(rec)
			}()
		default:
			// More requests of the implementation's own pending than
			// maxServing: this one stays unanswered.
		}
	}
}

// serve answers a request the implementation sent us.
func (p *Peer) serve(rec Received) {
	if p.respond != nil {
		if line := p.respond(rec); line != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.WriteLine(ctx, line)
		}
		return
	}
	m := rec.Msg
	var result any
	rpcErr := &RPCError{Code: -32601, Message: "conform does not serve " + m.Method}
	if p.answer != nil {
		result, rpcErr = p.answer(rec)
	}
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if rpcErr != nil {
		reply["error"] = rpcErr
	} else {
		reply["result"] = result
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.WriteLine(ctx, b)
}

func (p *Peer) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func parseMessage(line []byte) *Message {
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &members) != nil {
		return nil
	}
	var m Message
	_ = json.Unmarshal(line, &m)
	_, m.hasID = members["id"]
	if m.hasID && m.ID == nil {
		m.ID = json.RawMessage("null")
	}
	if _, ok := members["error"]; ok && m.Error == nil {
		m.Error = &RPCError{Code: 0, Message: "(error member is not an object)"}
	}
	return &m
}

// WriteLine writes line and a newline to the implementation's stdin. It
// gives up when ctx ends (the implementation stopped reading).
func (p *Peer) WriteLine(ctx context.Context, line []byte) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if d, ok := p.in.(interface{ SetWriteDeadline(time.Time) error }); ok {
		dl, _ := ctx.Deadline()
		_ = d.SetWriteDeadline(dl)
	}
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.cls.Classify(seq, frames.In, time.Now(), line, false)
	p.mu.Unlock()
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	_, err := p.in.Write(buf)
	if err != nil {
		return fmt.Errorf("writing to the implementation: %w", err)
	}
	return nil
}

// mark starts a new scenario: the frames received so far are forgotten.
// It returns those that arrived after the previous scenario looked (up to
// seq), so that their problems are not lost.
func (p *Peer) mark(seq int64) []Received {
	p.mu.Lock()
	defer p.mu.Unlock()
	var late []Received
	for _, rec := range p.log {
		if rec.Seq > seq {
			late = append(late, rec)
		}
	}
	p.log = nil
	p.logBytes = 0
	return late
}

// forget drops the frames received up to seq and keeps the later ones.
func (p *Peer) forget(seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keep []Received
	p.logBytes = 0
	for _, rec := range p.log {
		if rec.Seq > seq {
			keep = append(keep, rec)
			p.logBytes += len(rec.Raw)
		}
	}
	p.log = keep
}

// snapshot returns the frames received since mark, whether stdout has
// ended, and a channel closed at the next change.
func (p *Peer) snapshot() ([]Received, bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log, p.eof, p.changed
}

// Exited reports whether the implementation has exited.
func (p *Peer) Exited() bool {
	if p.proc == nil {
		return false
	}
	select {
	case <-p.proc.Exited():
		return true
	default:
		return false
	}
}

// exitDescription says how the implementation ended, with the end of its
// stderr.
func (p *Peer) exitDescription() string {
	if p.proc == nil {
		return "the implementation closed its output"
	}
	s := "the implementation exited"
	at := p.exitedAt.Load()
	if at == nil && p.Exited() {
		now := time.Now() // reaped a moment ago; the goroutine noting when has not run yet
		at = &now
	}
	if at != nil {
		s += fmt.Sprintf(" %v after it started, at %s", at.Sub(p.started).Round(time.Millisecond), at.Format("15:04:05.000"))
	}
	if err := p.proc.Err(); err != nil {
		s += " (" + err.Error() + ")"
	} else if p.Exited() {
		s += " (status 0)"
	}
	if tail := p.proc.Stderr(); tail != "" {
		s += "; its stderr ends: " + lastLines(tail, 3)
	}
	return s
}

func lastLines(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}

// closeInput closes the implementation's stdin.
func (p *Peer) closeInput() {
	if c, ok := p.in.(io.Closer); ok {
		c.Close()
	}
}

// waitExit waits up to d for the implementation to exit.
func (p *Peer) waitExit(d time.Duration) bool {
	if p.proc == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.proc.Exited():
		return true
	case <-t.C:
		return false
	}
}

// exitCode is the implementation's exit status once it has exited (-1
// when a signal ended it).
func (p *Peer) exitCode() int {
	if p.proc == nil || p.proc.Cmd.ProcessState == nil {
		return -1
	}
	return p.proc.Cmd.ProcessState.ExitCode()
}

// Stop ends the implementation and its whole process group and waits for
// the reader.
func (p *Peer) Stop(grace time.Duration) {
	p.proc.Stop(grace)
	p.proc.Stdout.Close()
	<-p.readDone
	p.servers.Wait()
}

// idText renders an id for messages.
func idText(id int64) string { return strconv.FormatInt(id, 10) }
