package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// envelopeSeeds are lines for the envelope fuzz targets: requests,
// notifications, responses and errors with every kind of id, huge numbers,
// nested params, invalid UTF-8, duplicate and escaped member names, and
// truncated or otherwise malformed lines.
var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2,{"b":null}]}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"echo","params":["x",true,false,null]}`,
	`{"jsonrpc":"2.0","id":null,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"echo","params":null}`,
	`{"jsonrpc":"2.0","id":1.5e300,"method":"echo","params":1e999}`,
	`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"echo","params":-123456789012345678901234567890.5e-7}`,
	`{"jsonrpc":"2.0","id":"\u00e9\ud83d\ude00\n\"","method":"echo","params":"\u0000"}`,
	`{"jsonrpc":"2.0","method":"echo","params":{"n":1}}`,
	`{"jsonrpc":"2.0","method":"fail","params":[1]}`,
	`{"jsonrpc":"2.0","id":2,"method":"fail","params":{"why":"because"}}`,
	`{"jsonrpc":"2.0","id":3,"method":"panic"}`,
	`{"jsonrpc":"2.0","id":4,"method":"nope"}`,
	`{"jsonrpc":"2.0","id":5,"method":"echo","params":[[[[[[[[[[[[[[[[[[[[{"deep":[[[[[[[[[[1]]]]]]]]]]}]]]]]]]]]]]]]]]]]]]]}`,
	`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`,
	`{"jsonrpc":"2.0","id":99,"result":null}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"method not found","data":{"m":"x"}}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":1.5,"message":7}}`,
	`{"jsonrpc":"2.0","id":8,"error":"not an object","result":1}`,
	`{"jsonrpc":"2.0","id":9,"error":null,"result":[1]}`,
	`{"jsonrpc":"2.0","id":10}`,
	`{"jsonrpc":"2.0","id":{},"method":"echo"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"echo"}`,
	`{"jsonrpc":"2.0","id":true,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":11,"method":null}`,
	`{"jsonrpc":"2.0","id":12,"method":["echo"]}`,
	`{"jsonrpc":"1.0","id":13,"method":"echo"}`,
	`{"jsonrpc":2.0,"method":"echo"}`,
	`{"jsonrpc":"2\u002e0","id":14,"method":"echo"}`,
	`{"id":15,"method":"echo"}`,
	`{"jsonrpc":"2.0","\u0069d":16,"m\u0065thod":"\u0065cho","params":{"\u0061":1}}`,
	`{"jsonrpc":"2.0","id":17,"id":18,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":19,"i\u0064":20,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":21,"method":"echo","params":{"a":1,"a":2}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"ech\xff\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"echo\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"echo\",\"params\":\"\xed\xa0\x80\"}",
	`{"jsonrpc":"2.0","id":24,"method":"echo","params":{"x":"\ud800"}}`,
	`{"jsonrpc":"2.0","id":25,"method":"echo","params":`,
	`{"jsonrpc":"2.0","id":26,"meth`,
	`{"jsonrpc":"2.0","id":27,"method":"echo"} {}`,
	`{"jsonrpc":"2.0","id":28,"method":"echo",}`,
	`{"jsonrpc":"2.0","id":029,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":"30","method":"echo","extra":{"ignored":[1,2]}}`,
	" \t{\"jsonrpc\" : \"2.0\" ,\t\"id\" : 31 , \"method\" : \"echo\" , \"params\" : [ 1 , 2 ] }\r",
	`[{"jsonrpc":"2.0","id":32,"method":"echo"}]`,
	`[]`, `{}`, `42`, `"str"`, `null`, `true`, ``, ` `, `}`, `{"`, `\`,
	"\x00\x01\x02\xff\xfe",
	"{\"jsonrpc\":\"2.0\",\"id\":33,\"method\":\"echo\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"echo\"}\r\n\n[1]\n",
	"{\"jsonrpc\":\"2.0\",\"id\":34,\"method\":\"echo\",\"params\":\"" + strings.Repeat("x", fuzzMaxFrame) + "\"}",
}

// fuzzMaxFrame is the Conn's line limit in FuzzEnvelope, small enough for
// the fuzzer to reach with short inputs.
const fuzzMaxFrame = 160

// fuzzHandler echoes params as the result; "fail" answers with an error
// carrying the params as data, "panic" panics, and other methods are not
// found.
var fuzzHandler = HandlerFunc(func(_ context.Context, req *Request) (any, error) {
	switch req.Method {
	case "echo", "sentinel":
		return req.Params, nil
	case "fail":
		return nil, NewError(1, "failed", req.Params)
	case "panic":
		panic("fuzz")
	}
	return nil, MethodNotFound(req.Method)
})

// expectedReply is the reply a line must get, worked out independently of
// the Conn's decoder.
type expectedReply struct {
	id     string // raw JSON
	code   int64  // 0 for a result
	result string // raw JSON, for a result
	data   string // raw JSON, for an error; "" if none
}

// modelReplies returns, in order, the replies and frame error kinds a Conn
// with fuzzHandler and a limit of max must produce for the lines of data.
func modelReplies(data []byte, max int) (replies []expectedReply, kinds []FrameErrorKind) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	reject := func(id string, code int64, kind FrameErrorKind) {
		replies = append(replies, expectedReply{id: id, code: code})
		kinds = append(kinds, kind)
	}
	for _, l := range lines {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if len(l) > max {
			reject("null", CodeInvalidRequest, FrameTooLarge)
			continue
		}
		if len(bytes.Trim(l, " \t\r")) == 0 {
			continue
		}
		if !jsontext.Value(l).IsValid() {
			reject("null", CodeParseError, FrameMalformed)
			continue
		}
		var m map[string]jsontext.Value
		if json.Unmarshal(l, &m) != nil || m == nil { // not an object
			reject("null", CodeInvalidRequest, FrameInvalidEnvelope)
			continue
		}
		id, hasID := m["id"]
		replyID := "null"
		validID := !hasID
		if hasID {
			switch id.Kind() {
			case '"', '0', 'n':
				replyID, validID = string(id), true
			}
		}
		method, hasMethod := m["method"]
		_, hasResult := m["result"]
		_, hasError := m["error"]
		switch {
		case hasMethod && !validID:
			reject("null", CodeInvalidRequest, FrameInvalidEnvelope)
		case hasMethod && (string(m["jsonrpc"]) != `"2.0"` || method.Kind() != '"'):
			reject(replyID, CodeInvalidRequest, FrameInvalidEnvelope)
		case hasMethod && !hasID: // a notification
		case hasMethod:
			var name string
			json.Unmarshal(method, &name)
			params, hasParams := m["params"]
			switch name {
			case "echo", "sentinel":
				if !hasParams {
					params = jsontext.Value("null")
				}
				replies = append(replies, expectedReply{id: replyID, result: string(params)})
			case "fail":
				replies = append(replies, expectedReply{id: replyID, code: 1, data: string(params)})
			case "panic":
				replies = append(replies, expectedReply{id: replyID, code: CodeInternalError})
			default:
				replies = append(replies, expectedReply{id: replyID, code: CodeMethodNotFound})
			}
		case hasID && (hasResult || hasError):
			kinds = append(kinds, FrameUnknownResponse) // no call is pending
		default:
			reject(replyID, CodeInvalidRequest, FrameInvalidEnvelope)
		}
	}
	return replies, kinds
}

// checkReply checks that line is a valid JSON-RPC response matching want.
func checkReply(line []byte, want expectedReply) error {
	if !jsontext.Value(line).IsValid() {
		return errors.New("not valid JSON")
	}
	var m map[string]jsontext.Value
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("not an object: %v", err)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return errors.New(`"jsonrpc" is not "2.0"`)
	}
	id, ok := m["id"]
	if !ok || string(id) != want.id {
		return fmt.Errorf("id %s, want %s", id, want.id)
	}
	result, hasResult := m["result"]
	errObj, hasError := m["error"]
	if len(m) != 3 || hasResult == hasError {
		return errors.New("want exactly jsonrpc, id and one of result and error")
	}
	if want.code == 0 {
		if !hasResult || string(result) != want.result {
			return fmt.Errorf("want result %s", want.result)
		}
		return nil
	}
	if !hasError {
		return fmt.Errorf("want error %d", want.code)
	}
	var e struct {
		Code    *int64         `json:"code"`
		Message *string        `json:"message"`
		Data    jsontext.Value `json:"data"`
	}
	if err := json.Unmarshal(errObj, &e, json.RejectUnknownMembers(true)); err != nil {
		return fmt.Errorf("error object: %v", err)
	}
	if e.Code == nil || *e.Code != want.code || e.Message == nil {
		return fmt.Errorf("error object %s, want code %d and a message", errObj, want.code)
	}
	if want.data != "" && string(e.Data) != want.data {
		return fmt.Errorf("error data %s, want %s", errObj, want.data)
	}
	return nil
}

const sentinelLine = `{"jsonrpc":"2.0","id":"end of fuzz input","method":"sentinel","params":"end"}`

var errHung = errors.New("fuzz: connection hung")

// FuzzEnvelope feeds arbitrary lines to a live Conn over io.Pipe, followed by
// a request of its own. Every reply must be a valid JSON-RPC response whose
// id is null or the request's id byte for byte, the replies and frame errors
// must be those an independent model of the rules predicts (each request
// exactly one reply, in order), and afterwards a Call must still round-trip.
// Everything must finish within a few seconds.
func FuzzEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	// Several messages per input, kept short: the fuzzer minimises each new
	// input in time quadratic in its size.
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[1]}\n" +
		"{\"jsonrpc\":\"2.0\",\"method\":\"echo\"}\r\n\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n" +
		"x\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"fail\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		wantReplies, wantKinds := modelReplies(data, fuzzMaxFrame)

		var mu sync.Mutex
		var kinds []FrameErrorKind
		inR, inW := io.Pipe()   // peer -> Conn
		outR, outW := io.Pipe() // Conn -> peer
		c := NewConn(inR, outW, fuzzHandler, &Options{
			MaxFrame: fuzzMaxFrame,
			OnFrameError: func(err error) {
				fe, ok := err.(*FrameError)
				if !ok {
					t.Errorf("OnFrameError(%T %v)", err, err)
					return
				}
				mu.Lock()
				kinds = append(kinds, fe.Kind)
				mu.Unlock()
			},
		})
		// A hang unblocks every pipe, so that the test fails instead of
		// stalling the fuzzer.
		watchdog := time.AfterFunc(5*time.Second, func() {
			inW.CloseWithError(errHung)
			outR.CloseWithError(errHung)
		})
		defer watchdog.Stop()

		written := make(chan error, 1)
		go func() {
			_, err := inW.Write(data)
			if err == nil {
				_, err = io.WriteString(inW, "\n"+sentinelLine+"\n")
			}
			written <- err
		}()
		defer func() {
			c.Close()
			inW.Close()
			outR.Close()
			<-written
		}()

		r := ndjson.NewReader(outR, 0)
		want := append(wantReplies, expectedReply{id: `"end of fuzz input"`, result: `"end"`})
		for i, w := range want {
			line, err := r.ReadFrame()
			if err != nil {
				t.Fatalf("reading reply %d of %d: %v", i+1, len(want), err)
			}
			if err := checkReply(line, w); err != nil {
				t.Fatalf("reply %d of %d %s: %v (want %+v)", i+1, len(want), line, err, w)
			}
		}
		mu.Lock()
		gotKinds := kinds
		mu.Unlock()
		if fmt.Sprint(gotKinds) != fmt.Sprint(wantKinds) {
			t.Fatalf("frame errors %v, want %v", gotKinds, wantKinds)
		}

		// The connection survived: a call of ours still round-trips.
		called := make(chan error, 1)
		var result string
		go func() { called <- c.Call(context.Background(), "after", nil, &result) }()
		line, err := r.ReadFrame()
		if err != nil {
			t.Fatalf("reading the request of Call: %v", err)
		}
		if want := `{"jsonrpc":"2.0","id":1,"method":"after","params":{}}`; string(line) != want {
			t.Fatalf("Call wrote %s, want %s", line, want)
		}
		if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"result":"alive"}`+"\n"); err != nil {
			t.Fatalf("answering Call: %v", err)
		}
		if err := <-called; err != nil || result != "alive" {
			t.Fatalf("Call after the fuzz input = %q, %v", result, err)
		}
	})
}

// FuzzDecodeEnvelope checks the envelope decoder against the package's own
// encoders: whatever decodes as a request, notification or response,
// re-encoded with encodeRequest, encodeResult or encodeError, is one line
// that decodes to the same message.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // never a frame
		}
		var e envelope
		if json.Unmarshal(line, &e) != nil {
			return
		}
		b := new(bytes.Buffer)
		decode := func() envelope {
			t.Helper()
			frame := b.Bytes()
			if n := len(frame); n == 0 || frame[n-1] != '\n' || bytes.IndexByte(frame[:n-1], '\n') >= 0 {
				t.Fatalf("encoded %q: not one line", frame)
			}
			var got envelope
			if err := json.Unmarshal(frame, &got); err != nil {
				t.Fatalf("encoded %s does not decode: %v", frame, err)
			}
			return got
		}
		same := func(what string, got, want jsontext.Value) {
			t.Helper()
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %s re-encoded as %s (input %s, encoded %s)", what, want, got, line, b.Bytes())
			}
		}

		method, isString := methodName(e.method)
		id, validID := requestID(e.id)
		switch {
		case e.method != nil && isString && validID:
			params := e.params
			if len(params) == 0 || string(params) == "null" {
				params = jsontext.Value("{}") // what encodeRequest sends for no params
			}
			n, isCallID := callID(e.id)
			if e.id == nil || isCallID {
				if err := encodeRequest(b, n, method, e.params); err != nil {
					t.Fatalf("encodeRequest(%d, %q, %s): %v", n, method, e.params, err)
				}
				got := decode()
				same("id", got.id, e.id)
				if name, ok := methodName(got.method); !ok || name != method {
					t.Fatalf("method %q re-encoded as %s", method, got.method)
				}
				same("params", got.params, params)
				same("jsonrpc", got.version, jsontext.Value(`"2.0"`))
				return
			}
			// Other ids only appear in replies: echo the params as a result.
			if err := encodeResult(b, id, e.params); err != nil {
				t.Fatalf("encodeResult(%s, %s): %v", id, e.params, err)
			}
			got := decode()
			same("id", got.id, e.id)
			result := e.params
			if result == nil {
				result = jsontext.Value("null")
			}
			same("result", got.result, result)
		case e.method == nil && e.id != nil && e.result != nil && (e.err == nil || string(e.err) == "null"):
			if err := encodeResult(b, ID{raw: string(e.id)}, e.result); err != nil {
				t.Fatalf("encodeResult(%s, %s): %v", e.id, e.result, err)
			}
			got := decode()
			same("id", got.id, e.id)
			same("result", got.result, e.result)
		case e.method == nil && e.id != nil && e.err != nil && string(e.err) != "null":
			want, ok := decodeError(e.err).(*Error)
			if !ok {
				return // not an error object: Call reports it as such
			}
			encodeError(b, ID{raw: string(e.id)}, want)
			got := decode()
			same("id", got.id, e.id)
			gotErr, ok := decodeError(got.err).(*Error)
			if !ok {
				t.Fatalf("error %s re-encoded as %s, which does not decode", e.err, got.err)
			}
			if gotErr.Code != want.Code || gotErr.Message != want.Message || !bytes.Equal(gotErr.Data, want.Data) {
				t.Fatalf("error %+v re-encoded as %+v", want, gotErr)
			}
		}
	})
}
