package rpc_test

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func TestOutboundRequestEnvelope(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		var got []int
		done := callAsync(context.Background(), p.c, "session/new", nil, &got)
		p.expect(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
		p.send(`{"jsonrpc":"2.0","id":1,"result":[1,2]}`)
		if err := wait(t, done); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "[1 2]" {
			t.Fatalf("result = %v", got)
		}
	})
}

func TestOutboundParams(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		type point struct {
			X int `json:"x"`
			Y int `json:"y,omitzero"`
		}
		tests := []struct {
			name   string
			params any
			want   string
		}{
			{"nil", nil, `{}`},
			{"struct", point{X: 1}, `{"x":1}`},
			{"pointer", &point{X: 1, Y: 2}, `{"x":1,"y":2}`},
			{"nil pointer", (*point)(nil), `{}`},
			{"array", []int{1, 2}, `[1,2]`},
			{"map", map[string]int{"k": 1}, `{"k":1}`},
			{"raw value kept as is", jsontext.Value(`{"b" : 1,  "a":[ 2 ]}`), `{"b" : 1,  "a":[ 2 ]}`},
			{"encoding/json raw message", stdjson.RawMessage(`[ true ]`), `[ true ]`},
			{"multi-line raw value compacted", jsontext.Value("{\n  \"a\": 1\n}"), `{"a":1}`},
			{"raw null", jsontext.Value(`null`), `{}`},
			{"empty raw", jsontext.Value(nil), `{}`},
			{"raw escapes preserved", jsontext.Value(`{"s":"\u00e9\/"}`), `{"s":"\u00e9\/"}`},
			{"string escaping", map[string]string{"s": "line\nbreak \"q\" <tag>"}, `{"s":"line\nbreak \"q\" <tag>"}`},
		}
		p := tr.rawPeer(t, nil, nil)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := p.c.Notify(context.Background(), "m", tt.params); err != nil {
					t.Fatal(err)
				}
				p.expect(`{"jsonrpc":"2.0","method":"m","params":` + tt.want + `}`)
			})
		}
	})
}

func TestOutboundEncodingErrors(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		ctx := context.Background()
		for name, send := range map[string]func() error{
			"unmarshalable params":  func() error { return p.c.Notify(ctx, "m", make(chan int)) },
			"invalid raw params":    func() error { return p.c.Call(ctx, "m", jsontext.Value("{\n"), nil) },
			"invalid raw one line":  func() error { return p.c.Notify(ctx, "m", jsontext.Value("{")) },
			"invalid UTF-8 method":  func() error { return p.c.Notify(ctx, "m\xff", nil) },
			"invalid UTF-8 call":    func() error { return p.c.Call(ctx, "m\xff", nil, nil) },
			"call with bad params":  func() error { return p.c.Call(ctx, "m", func() {}, nil) },
			"invalid UTF-8 in text": func() error { return p.c.Notify(ctx, "m", "\xff") },
			"reply kind":            func() error { return p.c.Send(ctx, rpc.Outbound{Kind: rpc.KindResponse, Method: "m"}, nil) },
		} {
			if err := send(); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		p.expectSilence()
		// The connection is still usable.
		if err := p.c.Notify(ctx, "ok", nil); err != nil {
			t.Fatal(err)
		}
		p.expect(`{"jsonrpc":"2.0","method":"ok","params":{}}`)
	})
}

func TestMethodNameEscaping(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		if err := p.c.Notify(context.Background(), `a"b\c`, nil); err != nil {
			t.Fatal(err)
		}
		p.expect(`{"jsonrpc":"2.0","method":"a\"b\\c","params":{}}`)
	})
}

func TestResultEnvelopes(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		type reply struct {
			Status string `json:"status"`
		}
		p := tr.rawPeer(t, methods{
			"nil":        func(context.Context, *rpc.Request) (any, error) { return nil, nil },
			"struct":     func(context.Context, *rpc.Request) (any, error) { return reply{Status: "ok"}, nil },
			"raw":        func(context.Context, *rpc.Request) (any, error) { return jsontext.Value(`{"z": 1}`), nil },
			"raw null":   func(context.Context, *rpc.Request) (any, error) { return jsontext.Value(`null`), nil },
			"nil slice":  func(context.Context, *rpc.Request) (any, error) { return []int(nil), nil },
			"bad result": func(context.Context, *rpc.Request) (any, error) { return make(chan int), nil },
		}, nil)
		tests := []struct{ method, want string }{
			{"nil", `"result":null`},
			{"struct", `"result":{"status":"ok"}`},
			{"raw", `"result":{"z": 1}`},
			{"raw null", `"result":null`},
			{"nil slice", `"result":[]`},
		}
		for i, tt := range tests {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, i, tt.method))
			p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, i, tt.want))
		}
		p.send(`{"jsonrpc":"2.0","id":"x","method":"bad result"}`)
		got := p.recv()
		if want := `{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"internal error: cannot marshal result: `; !strings.HasPrefix(got, want) {
			t.Fatalf("got %s\nwant prefix %s", got, want)
		}
	})
}

func TestErrorEnvelopes(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		retry := true
		errs := []struct {
			err  error
			want string
		}{
			{rpc.ErrInvalidParams, `{"code":-32602,"message":"invalid params"}`},
			{rpc.NewError(-32001, "denied", map[string]string{"reason": "policy"}), `{"code":-32001,"message":"denied","data":{"reason":"policy"}}`},
			{rpc.NewError(-32000, "raw", jsontext.Value(`[1]`)), `{"code":-32000,"message":"raw","data":[1]}`},
			{rpc.NewError(-32000, "multi-line data", jsontext.Value("[1,\n2]")), `{"code":-32000,"message":"multi-line data","data":[1,2]}`},
			{fmt.Errorf("context: %w", rpc.NewError(-32004, "session not found", nil)), `{"code":-32004,"message":"session not found"}`},
			{errors.New("disk full"), `{"code":-32603,"message":"disk full"}`},
			{errors.New("bad \xff byte"), "{\"code\":-32603,\"message\":\"bad \ufffd byte\"}"},
			{&rpc.Error{Code: 1, Message: "bad data", Data: jsontext.Value(`{`)}, `{"code":1,"message":"bad data"}`},
			{&rpc.Error{Name: "session_busy", Message: "busy", Retryable: &retry}, `{"code":-32000,"message":"session_busy: busy"}`},
			{rpc.MethodNotFound(strings.Repeat("é", 100)), `{"code":-32601,"message":"method not found: ` + strings.Repeat("é", 64) + `…"}`},
			{rpc.UnsupportedOperation("m", "op"), `{"code":-32601,"message":"m: unsupported operation op","data":{"method":"m","operation":"op"}}`},
		}
		p := tr.rawPeer(t, rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			var i int
			fmt.Sscan(req.Method, &i)
			return "unused", errs[i].err
		}), nil)
		for i, tt := range errs {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"%d"}`, i, i))
			p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":%s}`, i, tt.want))
		}
	})
}

func TestCallReturnsPeerErrors(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, nil, nil)
		ctx := context.Background()

		done := callAsync(ctx, p.c, "m", nil, nil)
		p.recv()
		p.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method","data":{"m":"x"}}}`)
		err := wait(t, done)
		if !errors.Is(err, rpc.ErrMethodNotFound) {
			t.Fatalf("err = %v, want Is(ErrMethodNotFound)", err)
		}
		e, ok := errors.AsType[*rpc.Error](err)
		if !ok || e.Message != "no such method" || string(e.Data) != `{"m":"x"}` {
			t.Fatalf("err = %#v", err)
		}

		// A malformed error object fails the call it answers with a FrameError.
		done = callAsync(ctx, p.c, "m", nil, nil)
		p.recv()
		p.send(`{"jsonrpc":"2.0","id":2,"error":"not an object"}`)
		err = wait(t, done)
		if fe, ok := errors.AsType[*rpc.FrameError](err); !ok || fe.Kind != rpc.FrameInvalid || errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("malformed error object: err = %v", err)
		}
		if fe := p.frameError(); fe.Kind != rpc.FrameInvalid || fe.Claimed != rpc.KindError {
			t.Fatalf("frame error %+v", fe)
		}

		var out struct{ N int }
		done = callAsync(ctx, p.c, "m", nil, &out)
		p.recv()
		p.send(`{"jsonrpc":"2.0","id":3,"result":{"N":"not a number"}}`)
		if err := wait(t, done); err == nil {
			t.Fatal("undecodable result: no error")
		}

		done = callAsync(ctx, p.c, "m", nil, &out)
		p.recv()
		p.send(`{"jsonrpc":"2.0","id":4,"error":null,"result":{"N":4}}`)
		if err := wait(t, done); err != nil || out.N != 4 {
			t.Fatalf("err = %v, out = %+v", err, out)
		}
	})
}

func TestNewError(t *testing.T) {
	if e := rpc.NewError(1, "m", nil); e.Data != nil {
		t.Errorf("nil data: Data = %s", e.Data)
	}
	if e := rpc.NewError(1, "m", []int{1}); string(e.Data) != `[1]` {
		t.Errorf("Data = %s", e.Data)
	}
	if e := rpc.NewError(1, "m", make(chan int)); e.Data.Kind() != '"' {
		t.Errorf("unmarshalable data: Data = %s, want a JSON string", e.Data)
	}
}

func TestErrorIs(t *testing.T) {
	e := rpc.NewError(rpc.CodeInvalidParams, "custom message", nil)
	if !errors.Is(e, rpc.ErrInvalidParams) || !errors.Is(fmt.Errorf("x: %w", e), rpc.ErrInvalidParams) {
		t.Error("Is does not match by code")
	}
	if errors.Is(e, rpc.ErrInternal) || errors.Is(e, errors.New("custom message")) {
		t.Error("Is matches a different error")
	}
	if got := e.Error(); !strings.Contains(got, "-32602") || !strings.Contains(got, "custom message") {
		t.Errorf("Error() = %q", got)
	}
	named := &rpc.Error{Name: "session_busy", Message: "busy"}
	if !errors.Is(named, &rpc.Error{Name: "session_busy"}) || errors.Is(named, &rpc.Error{Name: "other"}) {
		t.Error("Is does not match by name")
	}
	if got := named.Error(); got != "rpc error session_busy: busy" {
		t.Errorf("Error() = %q", got)
	}
	if errors.Is(&rpc.Error{}, &rpc.Error{}) {
		t.Error("zero codes match")
	}
}

func TestFrameError(t *testing.T) {
	cause := errors.New("cause")
	fe := &rpc.FrameError{Kind: rpc.FrameMalformed, Err: cause, Snippet: "abc"}
	if !errors.Is(fe, cause) {
		t.Error("FrameError does not unwrap to its cause")
	}
	if s := fe.Error(); s != `rpc: malformed frame: cause in "abc"` {
		t.Errorf("Error() = %q", s)
	}
	for k := rpc.FrameMalformed; k <= rpc.FrameOverloaded; k++ {
		if strings.HasPrefix(k.String(), "FrameErrorKind") {
			t.Errorf("kind %d has no name", k)
		}
	}
	for k := rpc.KindRequest; k <= rpc.KindError; k++ {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"},
		{"éé", 3, "é…"},
		{"", 0, ""},
	} {
		if got := rpc.Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestDecodeParams(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	if err := rpc.DecodeParams(nil, &v); err != nil || v.A != 0 {
		t.Errorf("absent params: %v, %+v", err, v)
	}
	if err := rpc.DecodeParams(jsontext.Value(`{"a":2}`), &v); err != nil || v.A != 2 {
		t.Errorf("params: %v, %+v", err, v)
	}
	err := rpc.DecodeParams(jsontext.Value(`{"a":"x"}`), &v)
	if !errors.Is(err, rpc.ErrInvalidParams) || !strings.Contains(err.Error(), "a") {
		t.Errorf("bad params: %v", err)
	}
}

func TestWithOptions(t *testing.T) {
	base := &rpc.Options{MaxFrame: 7, Cancels: []rpc.CancelRule{{Method: "mine"}}, Preempt: []string{"p"}, Methods: []string{"m"}}
	o := rpc.WithOptions(base, []rpc.CancelRule{{Method: "proto"}}, []string{"q"}, []string{"n"})
	if o.MaxFrame != 7 || len(o.Cancels) != 2 || o.Cancels[0].Method != "proto" || fmt.Sprint(o.Preempt) != "[q p]" || fmt.Sprint(o.Methods) != "[n m]" {
		t.Errorf("WithOptions = %+v", o)
	}
	if len(base.Cancels) != 1 || len(base.Preempt) != 1 {
		t.Error("WithOptions changed its argument")
	}
	if o := rpc.WithOptions(nil, nil, []string{"q"}, nil); fmt.Sprint(o.Preempt) != "[q]" {
		t.Errorf("WithOptions(nil) = %+v", o)
	}
}

func TestBadFramesAnsweredAndSkipped(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		tests := []struct {
			name, in string
			kind     rpc.FrameErrorKind
			reply    string
		}{
			{"truncated", `{"jsonrpc":"2.0","id":1,"method":`, rpc.FrameMalformed, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
			{"not json", `hello`, rpc.FrameMalformed, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
			{"trailing data", `{"jsonrpc":"2.0","method":"m"} {}`, rpc.FrameMalformed, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
			{"duplicate member", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, rpc.FrameMalformed, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
			{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", rpc.FrameMalformed, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
			{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a request, notification or response"}}`},
			{"number", `42`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a request, notification or response"}}`},
			{"empty object", `{}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a request, notification or response"}}`},
			{"id only", `{"jsonrpc":"2.0","id":7}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"invalid request: not a request, notification or response"}}`},
			{"result without id", `{"jsonrpc":"2.0","result":1}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a request, notification or response"}}`},
			{"method not a string", `{"jsonrpc":"2.0","id":7,"method":1}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"invalid request: method must be a string"}}`},
			{"missing version", `{"id":"a","method":"m"}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
			{"wrong version", `{"jsonrpc":"1.0","id":8,"method":"m"}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
			{"version as number", `{"jsonrpc":2.0,"method":"m"}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
			{"object id", `{"jsonrpc":"2.0","id":{},"method":"m"}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: id must be a string, number or null"}}`},
			{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"m"}`, rpc.FrameInvalid, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: id must be a string, number or null"}}`},
		}
		p := tr.rawPeer(t, okHandler, nil)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p.send(tt.in)
				if fe := p.frameError(); fe.Kind != tt.kind || fe.Err == nil || !strings.HasPrefix(tt.in, strings.TrimSuffix(fe.Snippet, "…")) {
					t.Errorf("frame error = %+v, want kind %v", fe, tt.kind)
				}
				p.expect(tt.reply)
				// The connection keeps going.
				p.send(`{"jsonrpc":"2.0","id":"next","method":"ok"}`)
				p.expect(`{"jsonrpc":"2.0","id":"next","result":"ok"}`)
			})
		}
	})
}

// A line over the limit is answered from what its start shows: a request
// under its own id, anything unreadable under id null.
func TestOversizedFrame(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const refusal = `"error":{"code":-32600,"message":"invalid request: frame exceeds the 100-byte limit"}}`
		long := strings.Repeat("x", 200)
		for _, tt := range []struct{ name, line, reply string }{
			{"request", `{"jsonrpc":"2.0","id":1,"method":"` + long + `"}`, `{"jsonrpc":"2.0","id":1,` + refusal},
			{"request with a string id", `{"jsonrpc":"2.0","id":"r-1","method":"ok","params":{"p":"` + long + `"}}`, `{"jsonrpc":"2.0","id":"r-1",` + refusal},
			{"id after the long member", `{"jsonrpc":"2.0","method":"ok","params":{"p":"` + strings.Repeat("x", 2000) + `"},"id":2}`, `{"jsonrpc":"2.0","id":null,` + refusal},
			{"id cut by the limit of the head", `{"method":"ok","params":"` + strings.Repeat("x", ndjson.HeadSize-33) + `","id":1234567890}`, `{"jsonrpc":"2.0","id":null,` + refusal},
			{"notification or request", `{"jsonrpc":"2.0","method":"ok","params":"` + long + `"}`, `{"jsonrpc":"2.0","id":null,` + refusal},
			{"not JSON", long, `{"jsonrpc":"2.0","id":null,` + refusal},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p := tr.rawPeer(t, okHandler, &rpc.Options{MaxFrame: 100})
				p.send(tt.line)
				fe := p.frameError()
				if fe.Kind != rpc.FrameTooLarge || !errors.Is(fe, ndjson.ErrFrameTooLarge) || !strings.HasPrefix(tt.line, fe.Snippet[:len(fe.Snippet)-len("…")]) {
					t.Errorf("frame error = %v, want FrameTooLarge with the line's start", fe)
				}
				p.expect(tt.reply)
				p.send(`{"jsonrpc":"2.0","id":2,"method":"ok"}`)
				p.expect(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)
			})
		}
	})
}

// A reply over the limit fails the call it answers at once, with an error
// that says so, and is not answered; one that answers no call is dropped.
func TestOversizedReplyFailsItsCall(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		long := strings.Repeat("x", 200)
		for _, tt := range []struct{ name, reply string }{
			{"result", `{"jsonrpc":"2.0","id":1,"result":"` + long + `"}`},
			{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"` + long + `"}}`},
			{"result before the id", `{"result":[` + strings.Repeat("1,", 10) + `1],"id":1,"data":"` + long + `"}`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p := tr.rawPeer(t, okHandler, &rpc.Options{MaxFrame: 100})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				done := callAsync(ctx, p.c, "m", nil, nil)
				p.expect(`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`)
				p.send(`{"jsonrpc":"2.0","id":99,"result":"` + long + `"}`) // answers no call
				p.send(tt.reply)
				err := wait(t, done)
				var fe *rpc.FrameError
				if !errors.Is(err, ndjson.ErrFrameTooLarge) || !errors.As(err, &fe) || fe.Kind != rpc.FrameTooLarge {
					t.Fatalf("Call = %v, want a FrameTooLarge error", err)
				}
				p.expectSilence()
				// The connection keeps going, and so do calls.
				done = callAsync(ctx, p.c, "m", nil, nil)
				p.expect(`{"jsonrpc":"2.0","id":2,"method":"m","params":{}}`)
				p.send(`{"jsonrpc":"2.0","id":2,"result":null}`)
				if err := wait(t, done); err != nil {
					t.Fatalf("the next Call = %v", err)
				}
			})
		}
	})
}

// A line with more objects and arrays than MaxObjects is refused as one
// over MaxFrame is, whole, before anything decodes it: a request under its
// id (wherever the id is), a reply by failing its call; one at the bound is
// taken.
func TestTooManyObjects(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		const refusal = `"error":{"code":-32600,"message":"invalid request: rpc: too many JSON objects and arrays (more than 10)"}}`
		many := "[" + strings.Repeat("{},", 10) + "{}]" // 12 containers
		p := tr.rawPeer(t, okHandler, &rpc.Options{MaxObjects: 10})
		for _, tt := range []struct{ name, line, reply string }{
			{"request", `{"jsonrpc":"2.0","id":1,"method":"ok","params":` + many + `}`, `{"jsonrpc":"2.0","id":1,` + refusal},
			{"id after the params", `{"jsonrpc":"2.0","method":"ok","params":` + many + `,"id":"late"}`, `{"jsonrpc":"2.0","id":"late",` + refusal},
			{"brackets in strings do not count", `{"jsonrpc":"2.0","id":3,"method":"ok","params":["[[[[{{{{\"[[[[{{{{\\","{{{{[[[["]}`, `{"jsonrpc":"2.0","id":3,"result":"ok"}`},
			{"at the bound", `{"jsonrpc":"2.0","id":4,"method":"ok","params":[` + strings.Repeat("[],", 7) + `[]]}`, `{"jsonrpc":"2.0","id":4,"result":"ok"}`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p.send(tt.line)
				if strings.Contains(tt.reply, "error") {
					if fe := p.frameError(); fe.Kind != rpc.FrameTooLarge || !errors.Is(fe, rpc.ErrTooManyObjects) {
						t.Errorf("frame error = %v, want FrameTooLarge matching ErrTooManyObjects", fe)
					}
				}
				p.expect(tt.reply)
			})
		}
		// The line's own envelope counts: 10 objects and arrays in all above.
		// A reply with too many fails its call, and the connection goes on.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := callAsync(ctx, p.c, "m", nil, nil)
		p.expect(`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`)
		p.send(`{"jsonrpc":"2.0","result":` + many + `,"id":1}`)
		if err := wait(t, done); !errors.Is(err, rpc.ErrTooManyObjects) {
			t.Fatalf("Call = %v, want ErrTooManyObjects", err)
		}
		p.frameError()
		p.send(`{"jsonrpc":"2.0","id":5,"method":"ok"}`)
		p.expect(`{"jsonrpc":"2.0","id":5,"result":"ok"}`)
	})
}

func TestLenientEnvelopeParsing(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		p := tr.rawPeer(t, okHandler, nil)
		for _, in := range []string{
			`{"method":"ok","id":1,"jsonrpc":"2.0"}`,                            // any member order
			`{"jsonrpc":"2.0","id":1,"method":"ok","extra":{"x":[1]}}`,          // unknown members
			` { "jsonrpc" : "2.0" , "id" : 1 , "method" : "ok" } `,              // whitespace
			`{"jsonrpc":"2.0","\u0069d":1,"m\u0065thod":"\u006fk"}`,             // escapes
			`{"jsonrpc":"2.0","id":1,"method":"ok","params":null}`,              // null params
			`{"jsonrpc":"2.0","id":1,"method":"ok","params":[1,{"a":"b"}]}`,     // array params
			`{"jsonrpc":"2.0","id":1,"method":"ok","result":1,"error":"x"}`,     // a method makes it a request
			"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ok\"}\r",                // CRLF framing
			`{"jsonrpc":"2.0","id":1,"method":"ok","params":{"s":"caf\u00e9"}}`, // escaped params
		} {
			p.send(in)
			p.expect(`{"jsonrpc":"2.0","id":1,"result":"ok"}`)
		}
		p.send("", "   ", "\t")
		p.expectSilence()
		select {
		case fe := <-p.frameErrs:
			t.Fatalf("unexpected frame error %v", fe)
		default:
		}
	})
}

// TestBlankLineAfterMessage: a message followed by a blank line in the
// same write is handled without waiting for more input.
func TestBlankLineAfterMessage(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		for _, tail := range []string{"\n", "\r\n", "  \n\t\n", "\n  "} {
			p := tr.rawPeer(t, okHandler, nil)
			p.send(`{"jsonrpc":"2.0","id":1,"method":"ok"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ok"}` + tail)
			p.expect(`{"jsonrpc":"2.0","id":1,"result":"ok"}`)
			p.expect(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)
		}
	})
}

func TestMember(t *testing.T) {
	for _, tc := range []struct{ obj, name, want string }{
		{`{"a":1,"id":"x"}`, "id", `"x"`},
		{`{"a":{"id":2},"id":[1, 2]}`, "id", `[1, 2]`},
		{`{"\u0069d":3}`, "id", `3`},
		{`{"id":"x", broken`, "id", `"x"`}, // found before the line goes wrong
		{`{broken, "id":"x"}`, "id", ``},
		{`{"a":1}`, "id", ``},
		{`["id"]`, "id", ``},
		{``, "id", ``},
	} {
		if got := string(rpc.Member([]byte(tc.obj), tc.name)); got != tc.want {
			t.Errorf("Member(%s, %q) = %s, want %s", tc.obj, tc.name, got, tc.want)
		}
	}
}
