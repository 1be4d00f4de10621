package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

// T is a running scenario's handle on the implementation: it sends frames,
// waits for answers and collects problems. Every wait ends with the
// scenario's context.
type T struct {
	peer         *Peer
	cfg          *Config
	problems     []Problem
	notImpl      bool
	detail       string
	exitExpected bool            // the scenario ends the implementation on purpose
	exitReported bool            // the exit is a problem reported already
	tolerate     map[string]bool // frame problem codes this scenario expects
	lastSeq      int64           // the last frame whose problems were collected
	notes        []Problem       // what frames held that this version does not know
}

// Config returns the run's configuration.
func (t *T) Config() *Config { return t.cfg }

// Fail records a problem.
func (t *T) Fail(p Problem) { t.problems = append(t.problems, p) }

// Failf records a problem with a frame.
func (t *T) Failf(method string, frame int64, code, format string, args ...any) {
	t.Fail(Problem{Method: method, Frame: frame, Code: code, Message: fmt.Sprintf(format, args...)})
}

// Failed says whether a problem was recorded.
func (t *T) Failed() bool { return len(t.problems) > 0 }

// NotImplemented ends the scenario as not implemented, with why.
func (t *T) NotImplemented(why string) {
	t.notImpl = true
	t.detail = why
}

// Note sets the row's detail.
func (t *T) Note(format string, args ...any) { t.detail = fmt.Sprintf(format, args...) }

// Tolerate makes frame problems of code (frames.Problem codes) expected in
// this scenario.
func (t *T) Tolerate(code string) { t.tolerate[code] = true }

// ExpectExit says the implementation is meant to exit in this scenario.
func (t *T) ExpectExit() { t.exitExpected = true }

// NextID returns a fresh request id.
func (t *T) NextID() int64 {
	t.peer.mu.Lock()
	defer t.peer.mu.Unlock()
	t.peer.nextID++
	return t.peer.nextID
}

// Request sends a request and returns its id.
func (t *T) Request(ctx context.Context, method string, params any) (int64, bool) {
	id := t.NextID()
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Failf(method, 0, "conform", "encoding the request: %v", err)
		return 0, false
	}
	return id, t.SendRaw(ctx, method, line)
}

// Notify sends a notification.
func (t *T) Notify(ctx context.Context, method string, params any) bool {
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		t.Failf(method, 0, "conform", "encoding the notification: %v", err)
		return false
	}
	return t.SendRaw(ctx, method, line)
}

// SendRaw sends one line as it is.
func (t *T) SendRaw(ctx context.Context, method string, line []byte) bool {
	if err := t.peer.WriteLine(ctx, line); err != nil {
		t.Failf(method, 0, "write", "%v", err)
		return false
	}
	return true
}

// Call sends a request and waits for its answer; nil when none came (the
// problem is recorded).
func (t *T) Call(ctx context.Context, method string, params any) *Reply {
	id, ok := t.Request(ctx, method, params)
	if !ok {
		return nil
	}
	return t.Await(ctx, method, id)
}

// Reply is the implementation's answer to one request.
type Reply struct {
	Received
	Method string
}

// Err returns the reply's error object, nil for a result.
func (r *Reply) Err() *RPCError { return r.Msg.Error }

// Await waits for the answer to request id of method.
func (r *T) Await(ctx context.Context, method string, id int64) *Reply {
	want := []byte(strconv.FormatInt(id, 10))
	rec, ok := r.WaitFor(ctx, func(rec Received) bool {
		return rec.Msg != nil && rec.Msg.IsReply() && bytes.Equal(bytes.TrimSpace(rec.Msg.ID), want)
	})
	if !ok {
		r.Failf(method, 0, "no_answer", "no answer to request %d: %s", id, r.why(ctx))
		return nil
	}
	return &Reply{Received: rec, Method: method}
}

// why says why a wait ended without its frame.
func (t *T) why(ctx context.Context) string {
	if _, eof, _ := t.peer.snapshot(); eof {
		// Its stdout ends as it exits: give the exit a moment to be reaped.
		t.peer.waitExit(time.Second)
	}
	if t.peer.Exited() {
		t.exitReported = true // reported here, not again
		return t.peer.exitDescription()
	}
	if _, eof, _ := t.peer.snapshot(); eof {
		return "the implementation closed its stdout"
	}
	if ctx.Err() != nil {
		if d := t.cfg.Deadline; !d.IsZero() && !time.Now().Before(d) {
			return fmt.Sprintf("the run's deadline (%s) passed", d.Format(time.TimeOnly))
		}
		return fmt.Sprintf("nothing within the scenario's %v", t.cfg.Timeout)
	}
	return "gave up"
}

// WaitFor waits for a received frame, from the start of the scenario, that
// match accepts, and returns it; false when ctx ends or the
// implementation's stdout does first.
func (t *T) WaitFor(ctx context.Context, match func(Received) bool) (Received, bool) {
	for {
		log, eof, changed := t.peer.snapshot()
		for _, rec := range log {
			if match(rec) {
				return rec, true
			}
		}
		if eof {
			return Received{}, false
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Received{}, false
		}
	}
}

// Received returns the frames received in this scenario so far.
func (t *T) Received() []Received {
	log, _, _ := t.peer.snapshot()
	return log
}

// Settle waits d (or until ctx ends) so that late frames arrive.
func (t *T) Settle(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// Alive checks that the implementation still answers: it sends a request
// of a method no catalogue has and waits for any answer to it.
func (t *T) Alive(ctx context.Context) bool {
	r := t.Call(ctx, probeMethod, map[string]any{})
	if r == nil {
		t.problems[len(t.problems)-1].Message = "no longer answers after this scenario's input: " + t.problems[len(t.problems)-1].Message
		return false
	}
	return true
}

// probeMethod is a method no protocol has, for liveness probes.
const probeMethod = "conform/probe"

// ExpectResult checks that r is a result (not an error) and returns its
// raw JSON.
func (t *T) ExpectResult(r *Reply) (json.RawMessage, bool) {
	if r == nil {
		return nil, false
	}
	if e := r.Err(); e != nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error", Code: "unexpected_error",
			Message: fmt.Sprintf("answered error %d %q where a result was expected", e.Code, e.Message)})
		return nil, false
	}
	if r.Msg.Result == nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result", Code: "malformed", Message: "a reply with neither result nor error"})
		return nil, false
	}
	return r.Msg.Result, true
}

// ExpectError checks that r is an error with one of codes.
func (t *T) ExpectError(r *Reply, codes ...int) bool {
	if r == nil {
		return false
	}
	e := r.Err()
	if e == nil {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/result", Code: "expected_error",
			Message: fmt.Sprintf("answered a result where error %s was expected", codeList(codes))})
		return false
	}
	for _, c := range codes {
		if e.Code == c {
			return true
		}
	}
	t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: "/error/code", Code: "error_code",
		Message: fmt.Sprintf("error code %d (%q), want %s", e.Code, e.Message, codeList(codes))})
	return false
}

// IsMethodNotFound says whether r is error -32601.
func IsMethodNotFound(r *Reply) bool {
	return r != nil && r.Err() != nil && r.Err().Code == CodeMethodNotFound
}

// JSON-RPC's error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

func codeList(codes []int) string {
	s := ""
	for i, c := range codes {
		if i > 0 {
			if i == len(codes)-1 {
				s += " or "
			} else {
				s += ", "
			}
		}
		s += strconv.Itoa(c)
	}
	return s
}

// CheckBody decodes body with the generated type typ (a host/call
// operation's result, checked as on a Harn connection) and records a schema
// problem at its pointer (under prefix) when it does not fit.
func (t *T) CheckBody(r *Reply, typ frames.Operation, body []byte, prefix string) bool {
	if p, bad := frames.CheckType(frames.Harn, typ.Result, body, prefix); bad {
		t.Fail(Problem{Method: r.Method, Frame: r.Seq, Pointer: p.Pointer, Code: p.Code, Message: p.Message})
		return false
	}
	return true
}

// collectFrameProblems turns the classifier's findings on received frames
// into the scenario's problems.
func (t *T) collectFrameProblems() {
	t.collectFrom(t.Received())
}

func (t *T) collectFrom(log []Received) {
	for _, rec := range log {
		if rec.Seq > t.lastSeq {
			t.lastSeq = rec.Seq
		}
		for _, p := range rec.Frame.Problems {
			if t.tolerate[p.Code] {
				continue
			}
			method := rec.Frame.Method
			msg := p.Message
			if p.Code == frames.ProblemMalformed {
				msg += ": " + clip(string(rec.Raw)) // what it was, since it has no method to name
			}
			t.Fail(Problem{Method: method, Frame: rec.Seq, Pointer: p.Pointer, Code: p.Code, Message: msg})
		}
		for _, n := range rec.Notes {
			p := Problem{Method: rec.Frame.Method, Frame: rec.Seq, Pointer: n.Pointer, Code: n.Code, Message: n.Message}
			if t.cfg != nil && t.cfg.Strict {
				t.Fail(p)
			} else {
				t.notes = append(t.notes, p)
			}
		}
	}
}
