package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/rpc"
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
	`{"jsonrpc":"2.0","id":4,"method":"` + strings.Repeat("é", 70) + `"}`,
	`{"jsonrpc":"2.0","id":5,"method":"echo","params":[[[[[[[[[[[[[[[[[[[[{"deep":[[[[[[[[[[1]]]]]]]]]]}]]]]]]]]]]]]]]]]]]]]}`,
	`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`,
	`{"jsonrpc":"2.0","id":99,"result":null}`,
	`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"method not found","data":{"m":"x"}}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":1.5,"message":7}}`,
	`{"jsonrpc":"2.0","id":8,"error":"not an object","result":1}`,
	`{"jsonrpc":"2.0","id":9,"error":null,"result":[1]}`,
	`{"jsonrpc":"2.0","id":9,"error":null}`,
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
	" \t{\"jsonrpc\" : \"2.0\" ,\t\"id\" : 31 , \"method\" : \"echo\" , \"params\" : [ 1 ,\r2 ] }\r",
	`[{"jsonrpc":"2.0","id":32,"method":"echo"}]`,
	`[]`, `{}`, `42`, `"str"`, `null`, `true`, ``, ` `, `}`, `{"`, `\`,
	"\x00\x01\x02\xff\xfe",
	"{\"jsonrpc\":\"2.0\",\"id\":33,\"method\":\"echo\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"echo\"}\r\n\n[1]\n",
	"{\"jsonrpc\":\"2.0\",\"id\":34,\"method\":\"echo\",\"params\":\"" + strings.Repeat("x", fuzzMaxFrame) + "\"}",
	strings.Repeat(" ", fuzzMaxFrame+1),
	// Over the limit: the start of the line decides the answer.
	`{"jsonrpc":"2.0","id":35,"result":"` + strings.Repeat("x", fuzzMaxFrame) + `"}`,
	`{"jsonrpc":"2.0","id":"s","error":{"code":1,"message":"` + strings.Repeat("x", fuzzMaxFrame) + `"}}`,
	`{"jsonrpc":"2.0","params":[` + strings.Repeat("1,", fuzzMaxFrame) + `1],"id":36,"method":"echo"}`,
	`{"jsonrpc":"2.0","method":"echo","params":"` + strings.Repeat("x", ndjson.HeadSize-55) + `","id":12345678901234567890}`,
	`{"jsonrpc":"2.0","id":null,"method":"echo","params":"` + strings.Repeat("x", fuzzMaxFrame) + `"}`,
	`{"jsonrpc":"2.0","i\u0064":37,"method":"echo","params":"` + strings.Repeat("x", fuzzMaxFrame) + `"}`,
}

// fuzzMaxFrame is the Conn's line limit in FuzzEnvelope, small enough for
// the fuzzer to reach with short inputs.
const fuzzMaxFrame = 160

// fuzzHandler echoes params as the result; "fail" answers with an error
// carrying the params as data, "panic" panics, and other methods are not
// found.
var fuzzHandler = rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case "echo", "sentinel":
		return req.Params, nil
	case "fail":
		return nil, rpc.NewError(1, "failed", req.Params)
	case "panic":
		panic("fuzz")
	}
	return nil, rpc.MethodNotFound(req.Method)
})

// fuzzModel is what a Conn with fuzzHandler and a limit of max must do
// with the lines of a fuzz input, worked out independently of the codec:
// the replies its dispatcher writes, in order; the replies its reader
// writes to lines it rejects, in order; and the frame errors it reports.
type fuzzModel struct {
	replies    []string
	rejections []rejectionModel
	kinds      []rpc.FrameErrorKind
}

// rejectionModel is the reader's reply to one line: one of alts, or, when
// optional, perhaps none.
type rejectionModel struct {
	alts     []string
	optional bool
}

// matchRejections reports whether the reader's replies got are those of
// the model, in order.
func matchRejections(got []string, want []rejectionModel) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if len(got) > 0 && slices.Contains(want[0].alts, got[0]) && matchRejections(got[1:], want[1:]) {
		return true
	}
	return want[0].optional && matchRejections(got, want[1:])
}

func (m *fuzzModel) String() string {
	var b strings.Builder
	for _, r := range m.rejections {
		fmt.Fprintf(&b, "%q (optional: %v)\n", r.alts, r.optional)
	}
	return b.String()
}

// modelHead reads what the start of a line over the limit shows, with
// jsontext, member by member: the members whose values it holds whole, and
// the member the cut falls in (a value running to the very end of head may
// be cut too). It reports the id to answer with, or "null", and whether to
// answer at all (a reply fails the call it answers instead). ambiguous
// marks a head the runtime's scanner may give up on before the end
// (escapes, deep nesting, many members): it may then know less.
func modelHead(head []byte) (id string, answer, ambiguous bool) {
	ambiguous = bytes.IndexByte(head, '\\') >= 0 || bytes.Count(head, []byte("{"))+bytes.Count(head, []byte("[")) > 60 ||
		bytes.Count(head, []byte(":")) > 30
	dec := jsontext.NewDecoder(bytes.NewReader(head))
	members, cut := map[string]string{}, ""
	if tok, err := dec.ReadToken(); err == nil && tok.Kind() == '{' {
		for {
			tok, err := dec.ReadToken()
			if err != nil || tok.Kind() != '"' {
				break
			}
			name := tok.String()
			// A member's value starts after its colon; a name without
			// one, or cut right after it, is no member yet.
			rest := bytes.TrimLeft(head[dec.InputOffset():], " \t\r\n")
			if len(rest) == 0 || rest[0] != ':' || len(bytes.TrimLeft(rest[1:], " \t\r\n")) == 0 {
				break
			}
			val, err := dec.ReadValue()
			if err != nil || int(dec.InputOffset()) == len(head) {
				cut = name
				break
			}
			members[name] = string(val)
		}
	}
	has := func(name string) bool { _, ok := members[name]; return ok || cut == name }
	raw, ok := members["id"]
	if !ok || raw == "null" || raw[0] != '"' && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return "null", true, ambiguous
	}
	switch {
	case has("method") || has("params"):
		return raw, true, ambiguous
	case has("result") || has("error"):
		return "", false, ambiguous
	}
	return "null", true, ambiguous
}

func quote(s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}

func modelReplies(data []byte, max int) *fuzzModel {
	m := &fuzzModel{}
	rejection := func(id, code, message string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + code + `,"message":` + quote(message) + `}}`
	}
	reject := func(id, code, message string, kind rpc.FrameErrorKind) {
		m.rejections = append(m.rejections, rejectionModel{alts: []string{rejection(id, code, message)}})
		m.kinds = append(m.kinds, kind)
	}
	reply := func(id, member string) {
		m.replies = append(m.replies, `{"jsonrpc":"2.0","id":`+id+`,`+member+`}`)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if len(l) > max {
			id, answer, ambiguous := modelHead(l[:min(len(l), ndjson.HeadSize)])
			msg := fmt.Sprintf("invalid request: frame exceeds the %d-byte limit", max)
			var r rejectionModel
			if answer {
				r.alts = append(r.alts, rejection(id, "-32600", msg))
			}
			if ambiguous && id != "null" {
				r.alts, r.optional = append(r.alts, rejection("null", "-32600", msg)), true
			}
			if len(r.alts) > 0 {
				m.rejections = append(m.rejections, r)
			}
			m.kinds = append(m.kinds, rpc.FrameTooLarge)
			continue
		}
		if len(bytes.Trim(l, " \t\r")) == 0 {
			continue
		}
		if !jsontext.Value(l).IsValid() {
			reject("null", "-32700", "parse error", rpc.FrameMalformed)
			continue
		}
		invalid := func(id, why string) { reject(id, "-32600", "invalid request: "+why, rpc.FrameInvalid) }
		var obj map[string]jsontext.Value
		if json.Unmarshal(l, &obj) != nil || obj == nil { // not an object
			invalid("null", "not a request, notification or response")
			continue
		}
		id, hasID := obj["id"]
		replyID := "null"
		validID := !hasID
		if hasID {
			switch id.Kind() {
			case '"', '0', 'n':
				replyID, validID = string(id), true
			}
		}
		method, hasMethod := obj["method"]
		_, hasResult := obj["result"]
		errObj, hasError := obj["error"]
		switch {
		case hasMethod && !validID:
			invalid("null", "id must be a string, number or null")
		case hasMethod && string(obj["jsonrpc"]) != `"2.0"`:
			invalid(replyID, `"jsonrpc" must be "2.0"`)
		case hasMethod && method.Kind() != '"':
			invalid(replyID, "method must be a string")
		case hasMethod && !hasID: // a notification
		case hasMethod:
			var name string
			json.Unmarshal(method, &name)
			params, hasParams := obj["params"]
			switch name {
			case "echo", "sentinel":
				if !hasParams {
					params = jsontext.Value("null")
				}
				reply(replyID, `"result":`+string(params))
			case "fail":
				data := ""
				if hasParams {
					data = `,"data":` + string(params)
				}
				reply(replyID, `"error":{"code":1,"message":"failed"`+data+`}`)
			case "panic":
				reply(replyID, `"error":{"code":-32603,"message":"internal error: handler panicked"}`)
			default:
				reply(replyID, `"error":{"code":-32601,"message":`+quote("method not found: "+rpc.Truncate(name, rpc.MaxEcho))+`}`)
			}
		case hasID && (hasResult || hasError):
			var e struct {
				Code    int64          `json:"code"`
				Message string         `json:"message"`
				Data    jsontext.Value `json:"data"`
			}
			if hasError && string(errObj) != "null" && json.Unmarshal(errObj, &e) != nil {
				m.kinds = append(m.kinds, rpc.FrameInvalid) // fails the call it answers: none
			} else {
				m.kinds = append(m.kinds, rpc.FrameUnknownResponse) // no call is pending
			}
		default:
			invalid(replyID, "not a request, notification or response")
		}
	}
	return m
}

// rejection reports whether a reply is one the reader writes for a line
// it rejects rather than one of the dispatcher's.
func rejection(line []byte) bool {
	var r struct {
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(line, &r)
	return r.Error != nil && (r.Error.Code == rpc.CodeParseError || r.Error.Code == rpc.CodeInvalidRequest)
}

const (
	sentinelLine  = `{"jsonrpc":"2.0","id":"end of fuzz input","method":"sentinel","params":"end"}`
	sentinelReply = `{"jsonrpc":"2.0","id":"end of fuzz input","result":"end"}`
)

var errHung = errors.New("fuzz: connection hung")

// FuzzEnvelope feeds arbitrary lines to a live Conn over io.Pipe, followed
// by a request of its own. Every reply must be the one an independent model
// of the rules predicts, byte for byte: the dispatcher's replies in request
// order, the reader's replies to the lines it rejects in line order (the
// two streams may interleave); the frame errors reported must be those
// predicted; and afterwards a Call must still round-trip. Everything must
// finish within a few seconds.
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
		model := modelReplies(data, fuzzMaxFrame)
		wantReplies := append(model.replies, sentinelReply)

		reported := make(chan rpc.FrameErrorKind, 1<<16)
		inR, inW := io.Pipe()   // peer -> Conn
		outR, outW := io.Pipe() // Conn -> peer
		c := NewConn(inR, outW, fuzzHandler, &rpc.Options{
			MaxFrame:     fuzzMaxFrame,
			OnFrameError: func(fe *rpc.FrameError) { reported <- fe.Kind },
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

		r := ndjson.NewReader(outR, 1<<20)
		var replies, rejections []string
		for len(replies) < len(wantReplies) {
			line, err := r.ReadFrame()
			if err != nil {
				t.Fatalf("after %d replies and %d rejections of %d and %d: %v", len(replies), len(rejections), len(wantReplies), len(model.rejections), err)
			}
			if rejection(line) {
				rejections = append(rejections, string(line))
			} else {
				replies = append(replies, string(line))
			}
		}
		for i := range max(len(replies), len(wantReplies)) {
			if i >= len(replies) || i >= len(wantReplies) || replies[i] != wantReplies[i] {
				t.Fatalf("replies:\n%s\nwant:\n%s", strings.Join(replies, "\n"), strings.Join(wantReplies, "\n"))
			}
		}
		if !matchRejections(rejections, model.rejections) {
			t.Fatalf("rejections:\n%s\nwant:\n%s", strings.Join(rejections, "\n"), model)
		}

		// Reports are made from a goroutine of their own, and dropped when
		// more than its queue's 64 wait: compare exactly only below that.
		// Every frame before the sentinel has been read and counted: as many
		// reports as were not dropped are coming.
		st := c.Stats()
		n := -int(st.Unreported)
		for _, k := range st.FrameErrors {
			n += int(k)
		}
		got := make([]rpc.FrameErrorKind, n)
		for i := range got {
			select {
			case got[i] = <-reported:
			case <-time.After(5 * time.Second):
				t.Fatalf("%d of %d frame errors reported", i, n)
			}
		}
		if len(model.kinds) <= 64 && fmt.Sprint(got) != fmt.Sprint(model.kinds) ||
			len(model.kinds) > 64 && !subsequence(got, model.kinds) {
			t.Fatalf("frame errors %v, want %v", got, model.kinds)
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

// subsequence reports whether got is want with some elements left out.
func subsequence[T comparable](got, want []T) bool {
	i := 0
	for _, g := range got {
		for i < len(want) && want[i] != g {
			i++
		}
		if i == len(want) {
			return false
		}
		i++
	}
	return true
}

// FuzzDecodeEnvelope checks the decoder against the codec's own encoders:
// whatever decodes as a request, notification or response, re-encoded, is
// one line that decodes to the same message.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // never a frame
		}
		var in, out Codec
		var m rpc.Message
		if in.Decode(line, &m) != nil {
			return
		}
		var b []byte
		decode := func() *rpc.Message {
			t.Helper()
			if len(b) == 0 || bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("encoded %q: not one frame without a newline", b)
			}
			var got rpc.Message
			if err := out.Decode(b, &got); err != nil {
				t.Fatalf("encoded %s does not decode: %v (input %s)", b, err, line)
			}
			return &got
		}
		same := func(what string, got, want []byte) {
			t.Helper()
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %s re-encoded as %s (input %s, encoded %s)", what, want, got, line, b)
			}
		}
		frame := func(h *rpc.Header, body []byte) {
			b = out.AppendHead(nil, h)
			if len(body) == 0 || string(body) == "null" {
				b = append(b, out.NullBody(h)...)
			} else {
				b = append(b, body...)
			}
			b = out.AppendTail(b, h)
		}
		orNull := func(body []byte, null string) []byte {
			if len(body) == 0 || string(body) == "null" {
				return []byte(null)
			}
			return body
		}
		switch m.Kind {
		case rpc.KindNotification:
			method := string(m.Method)
			frame(&rpc.Header{Kind: rpc.KindNotification, Method: method}, m.Body)
			got := decode()
			if got.Kind != rpc.KindNotification || string(got.Method) != method {
				t.Fatalf("notification %q re-encoded as %v %q", method, got.Kind, got.Method)
			}
			same("params", got.Body, orNull(m.Body, "{}"))
		case rpc.KindRequest:
			method := string(m.Method)
			if seq, ok := in.Seq(m.ID); ok {
				frame(&rpc.Header{Kind: rpc.KindRequest, Seq: seq, Method: method}, m.Body)
				got := decode()
				if got.Kind != rpc.KindRequest || string(got.Method) != method {
					t.Fatalf("request %q re-encoded as %v %q", method, got.Kind, got.Method)
				}
				same("id", got.ID, m.ID)
				same("params", got.Body, orNull(m.Body, "{}"))
				return
			}
			// Other ids only appear in replies: echo the params as a result.
			frame(&rpc.Header{Kind: rpc.KindResponse, ID: rpc.RawID(m.ID)}, m.Body)
			got := decode()
			same("id", got.ID, m.ID)
			same("result", got.Body, orNull(m.Body, "null"))
		case rpc.KindResponse:
			frame(&rpc.Header{Kind: rpc.KindResponse, ID: rpc.RawID(m.ID)}, m.Body)
			got := decode()
			if got.Kind != rpc.KindResponse {
				t.Fatalf("response re-encoded as %v", got.Kind)
			}
			same("id", got.ID, m.ID)
			same("result", got.Body, orNull(m.Body, "null"))
		case rpc.KindError:
			want := *m.Err
			b = out.AppendError(nil, &rpc.Header{Kind: rpc.KindError, ID: rpc.RawID(m.ID)}, &want)
			got := decode()
			if got.Kind != rpc.KindError {
				t.Fatalf("error re-encoded as %v", got.Kind)
			}
			same("id", got.ID, m.ID)
			if want.Code == 0 {
				want.Code = -32000
			}
			if got.Err.Code != want.Code || got.Err.Message != want.Message || !bytes.Equal(got.Err.Data, want.Data) {
				t.Fatalf("error %+v re-encoded as %+v (%s)", want, got.Err, b)
			}
		}
	})
}

// FuzzDecodeHead cuts lines anywhere: what DecodeHead reads from the start
// of a line never contradicts what Decode reads from the whole of it (for
// lines that are plainly a request or plainly a reply), and a cut value is
// never taken for a whole one.
func FuzzDecodeHead(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":12345,"result":"x"}`), uint16(16))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a\"b","method":"m","params":[1,2,3]}`), uint16(40))
	f.Fuzz(func(t *testing.T, line []byte, cut uint16) {
		var whole, head Codec
		n := int(cut) % (len(line) + 1)
		kind, id := head.DecodeHead(line[:n])
		if id != nil && !bytes.Contains(line[:n], id) {
			t.Fatalf("DecodeHead(%q) = id %q, not in the line", line[:n], id)
		}
		var m rpc.Message
		if whole.Decode(line, &m) != nil {
			return
		}
		var obj map[string]jsontext.Value
		if json.Unmarshal(line, &obj) != nil {
			return
		}
		_, method := obj["method"]
		_, params := obj["params"]
		_, result := obj["result"]
		_, errMember := obj["error"]
		if (method || params) == (result || errMember) || id == nil {
			return
		}
		reply := kind == rpc.KindResponse || kind == rpc.KindError
		wholeReply := m.Kind == rpc.KindResponse || m.Kind == rpc.KindError
		if reply != wholeReply || kind == rpc.KindRequest != (m.Kind == rpc.KindRequest) || !bytes.Equal(id, m.ID) {
			t.Fatalf("DecodeHead(%q) = %v %q; the whole line %q is %v %q", line[:n], kind, id, line, m.Kind, m.ID)
		}
	})
}
