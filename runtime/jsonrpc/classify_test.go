package jsonrpc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

type wireReply struct {
	ID    jsontext.Value `json:"id"`
	Error *Error         `json:"error"`
}

func parseReply(t *testing.T, line string) wireReply {
	t.Helper()
	var r wireReply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("reply %s: %v", line, err)
	}
	return r
}

var okHandler = HandlerFunc(func(_ context.Context, req *Request) (any, error) { return req.Method, nil })

func TestBadFramesAnsweredAndSkipped(t *testing.T) {
	tests := []struct {
		name, in string
		kind     FrameErrorKind
		code     int64
		id       string
	}{
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":`, FrameMalformed, CodeParseError, "null"},
		{"not json", `hello`, FrameMalformed, CodeParseError, "null"},
		{"trailing data", `{"jsonrpc":"2.0","method":"m"} {}`, FrameMalformed, CodeParseError, "null"},
		{"duplicate member", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, FrameMalformed, CodeParseError, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, FrameInvalidEnvelope, CodeInvalidRequest, "null"},
		{"number", `42`, FrameInvalidEnvelope, CodeInvalidRequest, "null"},
		{"empty object", `{}`, FrameInvalidEnvelope, CodeInvalidRequest, "null"},
		{"id only", `{"jsonrpc":"2.0","id":7}`, FrameInvalidEnvelope, CodeInvalidRequest, "7"},
		{"result without id", `{"jsonrpc":"2.0","result":1}`, FrameInvalidEnvelope, CodeInvalidRequest, "null"},
		{"method not a string", `{"jsonrpc":"2.0","id":7,"method":1}`, FrameInvalidEnvelope, CodeInvalidRequest, "7"},
		{"missing version", `{"id":"a","method":"m"}`, FrameInvalidEnvelope, CodeInvalidRequest, `"a"`},
		{"wrong version", `{"jsonrpc":"1.0","id":8,"method":"m"}`, FrameInvalidEnvelope, CodeInvalidRequest, "8"},
		{"version as number", `{"jsonrpc":2.0,"method":"m"}`, FrameInvalidEnvelope, CodeInvalidRequest, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"m"}`, FrameInvalidEnvelope, CodeInvalidRequest, "null"},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"m"}`, FrameInvalidEnvelope, CodeInvalidRequest, "null"},
	}
	p := newRawPeer(t, okHandler, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(tt.in)
			if fe := p.frameError(); fe.Kind != tt.kind || fe.Err == nil || !strings.HasPrefix(tt.in, strings.TrimSuffix(fe.Snippet, "...")) {
				t.Errorf("frame error = %+v, want kind %v", fe, tt.kind)
			}
			r := parseReply(t, p.recv())
			if string(r.ID) != tt.id || r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("reply id=%s error=%+v, want id %s code %d", r.ID, r.Error, tt.id, tt.code)
			}
			// The connection keeps going.
			p.send(`{"jsonrpc":"2.0","id":"next","method":"ok"}`)
			p.expect(`{"jsonrpc":"2.0","id":"next","result":"ok"}`)
		})
	}
}

func TestOversizedFrame(t *testing.T) {
	p := newRawPeer(t, okHandler, &Options{MaxFrame: 100})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("x", 200) + `"}`)
	fe := p.frameError()
	if fe.Kind != FrameTooLarge || !errors.Is(fe, ndjson.ErrFrameTooLarge) {
		t.Errorf("frame error = %v, want FrameTooLarge", fe)
	}
	r := parseReply(t, p.recv())
	if string(r.ID) != "null" || r.Error == nil || r.Error.Code != CodeInvalidRequest || !strings.Contains(r.Error.Message, "100") {
		t.Fatalf("reply id=%s error=%+v", r.ID, r.Error)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ok"}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"result":"ok"}`)
}

func TestLenientEnvelopeParsing(t *testing.T) {
	p := newRawPeer(t, okHandler, nil)
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
}
