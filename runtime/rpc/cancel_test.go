package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// The cancel rules of the protocols bridgekit speaks.
var (
	acpCancel   = rpc.CancelRule{Method: "session/cancel", Target: "session/prompt", Key: "sessionId"}
	lspCancel   = rpc.CancelRule{Method: "$/cancel_request", ByID: "requestId"}
	cancelLimit = 100 * time.Millisecond // how soon a running handler must see its cancel
)

// prompts serves "session/prompt" requests that run until their context
// ends, reporting each start and end; "session/cancel" and "note" are
// recorded in the order they are handled.
type prompts struct {
	mu       sync.Mutex
	order    []string
	recorded chan string // each entry of order, as it is recorded
	started  chan string // the prompt's sessionId
	ended    chan ended
}

type ended struct {
	session string
	at      time.Time
	cause   error
}

func newPrompts() *prompts {
	return &prompts{recorded: make(chan string, 64), started: make(chan string, 16), ended: make(chan ended, 16)}
}

func (p *prompts) record(s string) {
	p.mu.Lock()
	p.order = append(p.order, s)
	p.mu.Unlock()
	select {
	case p.recorded <- s:
	default:
	}
}

func (p *prompts) handled() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.order...)
}

func (p *prompts) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	var params struct {
		SessionID string `json:"sessionId"`
		N         int    `json:"n"`
	}
	json.Unmarshal(req.Params, &params)
	switch req.Method {
	case "session/prompt":
		p.started <- params.SessionID
		<-ctx.Done()
		p.ended <- ended{params.SessionID, time.Now(), context.Cause(ctx)}
		p.record("prompt " + params.SessionID)
		return nil, ctx.Err()
	case "session/cancel":
		p.record("cancel " + params.SessionID)
		return nil, nil
	case "note":
		p.record(fmt.Sprintf("note %d", params.N))
		return nil, nil
	case "quick":
		p.record(fmt.Sprintf("quick %d", params.N))
		return params.N, nil
	}
	return nil, rpc.MethodNotFound(req.Method)
}

const cancelledReply = `"error":{"code":-32800,"message":"request cancelled: context canceled"}}`

// TestSessionCancel: with default options (requests one at a time), ACP's
// session/cancel ends the running prompt of its session at once and no
// other request; what is queued behind the prompt is handled afterwards.
func TestSessionCancel(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		h := newPrompts()
		p := tr.rawPeer(t, h, &rpc.Options{Cancels: []rpc.CancelRule{acpCancel}})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1"}}`)
		if s := wait(t, h.started); s != "s1" {
			t.Fatalf("started prompt %q", s)
		}
		// Queued behind the running prompt: a prompt of another session, a
		// notification and a request.
		p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s2"}}`,
			`{"jsonrpc":"2.0","method":"note","params":{"n":1}}`,
			`{"jsonrpc":"2.0","id":3,"method":"quick","params":{"n":3}}`)
		// A cancel for a session with no running prompt changes nothing.
		p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s9"}}`)
		select {
		case e := <-h.ended:
			t.Fatalf("prompt %s ended by another session's cancel", e.session)
		case <-time.After(20 * time.Millisecond):
		}

		sent := time.Now()
		p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
		e := wait(t, h.ended)
		latency := e.at.Sub(sent)
		t.Logf("the running handler saw its context end %v after the cancel was written", latency)
		if e.session != "s1" || latency > cancelLimit || !errors.Is(e.cause, rpc.ErrCancelled) {
			t.Fatalf("ended %+v after %v, want s1 within %v, cause ErrCancelled", e, latency, cancelLimit)
		}
		p.expect(`{"jsonrpc":"2.0","id":1,` + cancelledReply)

		// The s2 prompt runs next, untouched by s1's cancel.
		if s := wait(t, h.started); s != "s2" {
			t.Fatalf("started prompt %q", s)
		}
		select {
		case e := <-h.ended:
			t.Fatalf("prompt %s ended early", e.session)
		case <-time.After(20 * time.Millisecond):
		}
		p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s2"}}`)
		if e := wait(t, h.ended); e.session != "s2" {
			t.Fatalf("ended %+v", e)
		}
		p.expect(`{"jsonrpc":"2.0","id":2,` + cancelledReply)
		p.expect(`{"jsonrpc":"2.0","id":3,"result":3}`)
		// Cancel messages are handled on a lane of their own, in order among
		// themselves; the main lane kept its order. That lane's handler for the
		// last cancel may still be running: its rule was applied on arrival.
		for n := 0; n < 3; {
			if strings.HasPrefix(wait(t, h.recorded), "cancel ") {
				n++
			}
		}
		var cancels, main []string
		for _, s := range h.handled() {
			if strings.HasPrefix(s, "cancel ") {
				cancels = append(cancels, s)
			} else {
				main = append(main, s)
			}
		}
		if want := "[cancel s9 cancel s1 cancel s2]"; fmt.Sprint(cancels) != want {
			t.Errorf("cancel messages handled %q, want %s", cancels, want)
		}
		if want := "[prompt s1 prompt s2 note 1 quick 3]"; fmt.Sprint(main) != want {
			t.Errorf("main lane handled %q, want %s", main, want)
		}
	})
}

// TestCancelByID: $/cancel_request ends the request whose id it names.
func TestCancelByID(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		h := newPrompts()
		p := tr.rawPeer(t, h, &rpc.Options{Cancels: []rpc.CancelRule{lspCancel}, MaxConcurrentRequests: 2})
		p.send(`{"jsonrpc":"2.0","id":"a","method":"session/prompt","params":{"sessionId":"s1"}}`,
			`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s2"}}`)
		wait(t, h.started)
		wait(t, h.started)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":8}}`)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}`)
		if e := wait(t, h.ended); e.session != "s2" {
			t.Fatalf("ended %+v, want the prompt of request 7", e)
		}
		p.expect(`{"jsonrpc":"2.0","id":7,` + cancelledReply)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"a"}}`)
		if e := wait(t, h.ended); e.session != "s1" {
			t.Fatalf("ended %+v, want the prompt of request \"a\"", e)
		}
		p.expect(`{"jsonrpc":"2.0","id":"a",` + cancelledReply)
	})
}

// TestRequestTimeout: Options.RequestTimeout is each request's deadline.
func TestRequestTimeout(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const d = 30 * time.Millisecond
		h := newPrompts()
		p := tr.rawPeer(t, h, &rpc.Options{RequestTimeout: d})
		start := time.Now()
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1"}}`)
		e := wait(t, h.ended)
		if took := e.at.Sub(start); took < d || !errors.Is(e.cause, context.DeadlineExceeded) {
			t.Fatalf("prompt ended after %v with %v, want the %v deadline", took, e.cause, d)
		}
		p.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"request cancelled: context deadline exceeded"}}`)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"quick","params":{"n":2}}`)
		p.expect(`{"jsonrpc":"2.0","id":2,"result":2}`)
	})
}

// TestCancelWithEverySlotBusy: cancel messages are applied as they arrive
// even when every concurrency slot is taken and requests wait for one.
func TestCancelWithEverySlotBusy(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const slots = 2
		h := newPrompts()
		p := tr.rawPeer(t, h, &rpc.Options{Cancels: []rpc.CancelRule{acpCancel}, MaxConcurrentRequests: slots})
		for i := range slots + 2 {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s%d"}}`, i, i))
		}
		running := map[string]bool{}
		for range slots {
			running[wait(t, h.started)] = true
		}
		if !running["s0"] || !running["s1"] {
			t.Fatalf("running %v", running)
		}
		for _, s := range []string{"s1", "s0"} {
			sent := time.Now()
			p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + s + `"}}`)
			e := wait(t, h.ended)
			if e.session != s || e.at.Sub(sent) > cancelLimit {
				t.Fatalf("ended %+v %v after the cancel of %s", e, e.at.Sub(sent), s)
			}
			p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,`, s[1:]) + cancelledReply)
		}
		// The freed slots start the waiting prompts, in order.
		if a, b := wait(t, h.started), wait(t, h.started); a+b != "s2s3" && a+b != "s3s2" {
			t.Fatalf("started %s and %s", a, b)
		}
		p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s2"}}`,
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s3"}}`)
		p.recv()
		p.recv()
	})
}

// TestCancelQueuedPrompt: a cancel that arrives while its prompt waits
// behind another request ends the prompt's context before it starts.
func TestCancelQueuedPrompt(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		h := newPrompts()
		p := tr.rawPeer(t, h, &rpc.Options{Cancels: []rpc.CancelRule{acpCancel}})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1"}}`,
			`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s2"}}`,
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s2"}}`)
		wait(t, h.started)
		p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
		p.expect(`{"jsonrpc":"2.0","id":1,` + cancelledReply)
		p.expect(`{"jsonrpc":"2.0","id":2,` + cancelledReply)
	})
}

type promptParams struct {
	SessionID string   `json:"sessionId"`
	Prompt    []string `json:"prompt"`
}

// TestOutboundCancel: when the context of a call ends, the call returns at
// once and the peer receives the protocol's cancel message for it.
func TestOutboundCancel(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		cancelRun := rpc.CancelRule{Method: "cancel_run", Kind: rpc.KindRequest, Target: "run", Key: "runId"}
		stopAll := rpc.CancelRule{Method: "stop_all", Target: "batch"}
		tests := []struct {
			name, method string
			params       any
			rules        []rpc.CancelRule
			request      string
			cancel       string // "" for none
		}{
			{"session/cancel", "session/prompt", promptParams{SessionID: "s1", Prompt: []string{"hi"}}, []rpc.CancelRule{acpCancel, lspCancel},
				`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":["hi"]}}`,
				`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`},
			{"key value copied raw", "session/prompt", jsonValue(`{"sessionId" : "s\u0031"}`), []rpc.CancelRule{acpCancel},
				`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId" : "s\u0031"}}`,
				`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s\u0031"}}`},
			{"no key in params", "session/prompt", map[string]any{}, []rpc.CancelRule{acpCancel},
				`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`, ""},
			{"by id", "other", nil, []rpc.CancelRule{acpCancel, lspCancel},
				`{"jsonrpc":"2.0","id":1,"method":"other","params":{}}`,
				`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`},
			{"target without key", "batch", nil, []rpc.CancelRule{stopAll},
				`{"jsonrpc":"2.0","id":1,"method":"batch","params":{}}`,
				`{"jsonrpc":"2.0","method":"stop_all","params":{}}`},
			{"no rule", "other", nil, []rpc.CancelRule{acpCancel},
				`{"jsonrpc":"2.0","id":1,"method":"other","params":{}}`, ""},
			{"cancel as a request", "run", map[string]string{"runId": "r7"}, []rpc.CancelRule{cancelRun},
				`{"jsonrpc":"2.0","id":1,"method":"run","params":{"runId":"r7"}}`,
				`{"jsonrpc":"2.0","id":2,"method":"cancel_run","params":{"runId":"r7"}}`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := tr.rawPeer(t, nil, &rpc.Options{Cancels: tt.rules})
				ctx, cancel := context.WithCancel(context.Background())
				done := callAsync(ctx, p.c, tt.method, tt.params, nil)
				p.expect(tt.request)
				cancel()
				start := time.Now()
				err := wait(t, done)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Call = %v, want context.Canceled", err)
				}
				if d := time.Since(start); d > cancelLimit {
					t.Errorf("Call returned %v after its context ended", d)
				}
				if tt.cancel == "" {
					p.expectSilence()
					return
				}
				p.expect(tt.cancel)
				if tt.rules[0].Kind == rpc.KindRequest {
					p.send(`{"jsonrpc":"2.0","id":2,"result":null}`)
				}
				// The late reply to the cancelled call is dropped.
				p.send(`{"jsonrpc":"2.0","id":1,"result":null}`)
				if fe := p.frameError(); fe.Kind != rpc.FrameUnknownResponse {
					t.Fatalf("late reply: %+v", fe)
				}
			})
		}
	})
}

// TestOutboundCancelWhileQueued: a request whose context ends while it
// waits behind a blocked write is never sent, so no cancel message is.
func TestOutboundCancelWhileQueued(t *testing.T) {
	open := make(chan struct{})
	entered := make(chan struct{}, 1)
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	defer outR.Close()
	var out syncBuffer
	read := make(chan struct{})
	go func() { // the peer reads once the gate opens
		defer close(read)
		io.Copy(&out, outR)
	}()
	c := newConnOver(inR, gateWriter{open: open, entered: entered, w: outW}, &rpc.Options{Cancels: []rpc.CancelRule{acpCancel}})
	defer c.Close()
	blocked := make(chan error, 1)
	go func() { blocked <- c.Notify(context.Background(), "first", nil) }()
	wait(t, entered) // the notification holds the writer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, "session/prompt", map[string]string{"sessionId": "s1"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v", err)
	}
	close(open)
	if err := wait(t, blocked); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify(context.Background(), "last", nil); err != nil {
		t.Fatal(err)
	}
	c.Close() // nothing more is written: the peer reads to the end
	outW.Close()
	wait(t, read)
	want := `{"jsonrpc":"2.0","method":"first","params":{}}` + "\n" + `{"jsonrpc":"2.0","method":"last","params":{}}` + "\n"
	if got := out.String(); got != want {
		t.Fatalf("peer received\n%s\nwant\n%s", got, want)
	}
}

// TestPreempt: preempted methods are handled on their own lane, in order
// among themselves, while the main dispatcher is busy.
func TestPreempt(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		release := make(chan struct{})
		var mu sync.Mutex
		var order []string
		p := tr.rawPeer(t, rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			if req.Method == "work" {
				<-release
			}
			mu.Lock()
			order = append(order, req.Method+string(req.Params))
			mu.Unlock()
			return req.Method, nil
		}), &rpc.Options{Preempt: []string{"ctl/ping", "ctl/note"}})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"work"}`, `{"jsonrpc":"2.0","method":"other"}`)
		for i := range 5 {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"ctl/note","params":%d}`, i))
		}
		p.send(`{"jsonrpc":"2.0","id":2,"method":"ctl/ping","params":9}`)
		p.expect(`{"jsonrpc":"2.0","id":2,"result":"ctl/ping"}`)
		close(release)
		p.expect(`{"jsonrpc":"2.0","id":1,"result":"work"}`)
		p.send(`{"jsonrpc":"2.0","id":3,"method":"sync"}`)
		p.expect(`{"jsonrpc":"2.0","id":3,"result":"sync"}`)
		mu.Lock()
		defer mu.Unlock()
		want := "[ctl/note0 ctl/note1 ctl/note2 ctl/note3 ctl/note4 ctl/ping9 work other sync]"
		if fmt.Sprint(order) != want {
			t.Fatalf("handled %v, want %s", order, want)
		}
	})
}
