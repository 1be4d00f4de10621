package jsonrpc

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestOutboundRequestEnvelope(t *testing.T) {
	p := newRawPeer(t, nil, nil)
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
}

func TestOutboundParams(t *testing.T) {
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
		{"string escaping", map[string]string{"s": "line\nbreak \"q\" <tag>"}, `{"s":"line\nbreak \"q\" <tag>"}`},
	}
	p := newRawPeer(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := p.c.Notify(context.Background(), "m", tt.params); err != nil {
				t.Fatal(err)
			}
			p.expect(`{"jsonrpc":"2.0","method":"m","params":` + tt.want + `}`)
		})
	}
}

func TestOutboundEncodingErrors(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	ctx := context.Background()
	for name, send := range map[string]func() error{
		"unmarshalable params":  func() error { return p.c.Notify(ctx, "m", make(chan int)) },
		"invalid raw params":    func() error { return p.c.Call(ctx, "m", jsontext.Value("{\n"), nil) },
		"invalid UTF-8 method":  func() error { return p.c.Notify(ctx, "m\xff", nil) },
		"call with bad params":  func() error { return p.c.Call(ctx, "m", func() {}, nil) },
		"invalid UTF-8 in text": func() error { return p.c.Notify(ctx, "m", "\xff") },
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
}

func TestMethodNameEscaping(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	if err := p.c.Notify(context.Background(), `a"b\c`, nil); err != nil {
		t.Fatal(err)
	}
	p.expect(`{"jsonrpc":"2.0","method":"a\"b\\c","params":{}}`)
}

func TestResultEnvelopes(t *testing.T) {
	type reply struct {
		Status string `json:"status"`
	}
	p := newRawPeer(t, methods{
		"nil":        func(context.Context, *Request) (any, error) { return nil, nil },
		"struct":     func(context.Context, *Request) (any, error) { return reply{Status: "ok"}, nil },
		"raw":        func(context.Context, *Request) (any, error) { return jsontext.Value(`{"z": 1}`), nil },
		"nil slice":  func(context.Context, *Request) (any, error) { return []int(nil), nil },
		"bad result": func(context.Context, *Request) (any, error) { return make(chan int), nil },
	}, nil)
	tests := []struct{ method, want string }{
		{"nil", `"result":null`},
		{"struct", `"result":{"status":"ok"}`},
		{"raw", `"result":{"z": 1}`},
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
}

func TestErrorEnvelopes(t *testing.T) {
	errs := []struct {
		err  error
		want string
	}{
		{ErrInvalidParams, `{"code":-32602,"message":"invalid params"}`},
		{NewError(-32001, "denied", map[string]string{"reason": "policy"}), `{"code":-32001,"message":"denied","data":{"reason":"policy"}}`},
		{NewError(-32000, "raw", jsontext.Value(`[1]`)), `{"code":-32000,"message":"raw","data":[1]}`},
		{fmt.Errorf("context: %w", NewError(-32004, "session not found", nil)), `{"code":-32004,"message":"session not found"}`},
		{errors.New("disk full"), `{"code":-32603,"message":"disk full"}`},
		{errors.New("bad \xff byte"), "{\"code\":-32603,\"message\":\"bad \ufffd byte\"}"},
		{&Error{Code: 1, Message: "bad data", Data: jsontext.Value(`{`)}, `{"code":1,"message":"bad data"}`},
	}
	p := newRawPeer(t, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		var i int
		fmt.Sscan(req.Method, &i)
		return "unused", errs[i].err
	}), nil)
	for i, tt := range errs {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"%d"}`, i, i))
		p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":%s}`, i, tt.want))
	}
}

func TestCallReturnsPeerErrors(t *testing.T) {
	p := newRawPeer(t, nil, nil)
	ctx := context.Background()

	done := callAsync(ctx, p.c, "m", nil, nil)
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method","data":{"m":"x"}}}`)
	err := wait(t, done)
	if !errors.Is(err, ErrMethodNotFound) {
		t.Fatalf("err = %v, want Is(ErrMethodNotFound)", err)
	}
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Message != "no such method" || string(e.Data) != `{"m":"x"}` {
		t.Fatalf("err = %#v", err)
	}

	done = callAsync(ctx, p.c, "m", nil, nil)
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":2,"error":"not an object"}`)
	if err := wait(t, done); err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("malformed error object: err = %v", err)
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
}

func TestNewError(t *testing.T) {
	if e := NewError(1, "m", nil); e.Data != nil {
		t.Errorf("nil data: Data = %s", e.Data)
	}
	if e := NewError(1, "m", []int{1}); string(e.Data) != `[1]` {
		t.Errorf("Data = %s", e.Data)
	}
	if e := NewError(1, "m", make(chan int)); e.Data.Kind() != '"' {
		t.Errorf("unmarshalable data: Data = %s, want a JSON string", e.Data)
	}
}

func TestErrorIs(t *testing.T) {
	e := NewError(CodeInvalidParams, "custom message", nil)
	if !errors.Is(e, ErrInvalidParams) || !errors.Is(fmt.Errorf("x: %w", e), ErrInvalidParams) {
		t.Error("Is does not match by code")
	}
	if errors.Is(e, ErrInternal) || errors.Is(e, errors.New("custom message")) {
		t.Error("Is matches a different error")
	}
	if got := e.Error(); !strings.Contains(got, "-32602") || !strings.Contains(got, "custom message") {
		t.Errorf("Error() = %q", got)
	}
}

func TestID(t *testing.T) {
	var zero ID
	if !zero.IsZero() || zero.Raw() != nil || zero.String() != "" {
		t.Error("zero ID is not empty")
	}
	if id := Int64ID(-42); id.IsZero() || string(id.Raw()) != "-42" || id.String() != "-42" {
		t.Errorf("Int64ID(-42) = %q", id.Raw())
	}
	if id := StringID(`a"b`); string(id.Raw()) != `"a\"b"` {
		t.Errorf("StringID = %s", id.Raw())
	}
	if Int64ID(7) != Int64ID(7) || Int64ID(7) == StringID("7") {
		t.Error("IDs do not compare by JSON text")
	}
	if (&Request{}).IsNotification() != true || (&Request{ID: StringID("x")}).IsNotification() {
		t.Error("IsNotification")
	}
}

func TestFrameError(t *testing.T) {
	cause := errors.New("cause")
	fe := newFrameError(FrameMalformed, cause, []byte(strings.Repeat("x", 100)))
	if !errors.Is(fe, cause) {
		t.Error("FrameError does not unwrap to its cause")
	}
	if len(fe.Snippet) != snippetLen+len("...") {
		t.Errorf("snippet = %q", fe.Snippet)
	}
	if s := fe.Error(); !strings.Contains(s, "malformed") || !strings.Contains(s, "cause") {
		t.Errorf("Error() = %q", s)
	}
	for k := FrameMalformed; k <= FrameUnknownResponse; k++ {
		if strings.HasPrefix(k.String(), "FrameErrorKind") {
			t.Errorf("kind %d has no name", k)
		}
	}
}
