package envelope_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Frames quoted in ../shared/seeds/004_3ba54f5d2d8bad19.txt and the
// reference catalogues (machine.md §2-§8, service.md §2-§6), each with the
// role of the side that reads it.
var machineFrames = []string{
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"req-1","method":"start_run","payload":{"input":"Summarize the incident."}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"preflight","payload":{"status":"ready","report":{}}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","id":"corr-7","method":"harness_event","payload":{"schema_version":1}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"req-1","payload":{"status":"ended","output":"[redacted]"}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"error","id":"req-2","payload":null,"error":{"code":"session_busy","message":"a Harness Run is already active in this Session"}}`,
}

var serviceFrames = []string{
	`{"protocol":"agentpm-service","version":1,"kind":"request","id":"req-123","service":"knowledge","method":"retrieve","payload":{}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"response","id":"req-123","service":"knowledge","result":{}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"initialize","id":"knowledge-kb-1","service":"knowledge","method":"initialize","payload":{"role":"knowledge","registry_id":"kb","protocol_version":1}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"initialized","id":"knowledge-kb-1","service":"knowledge","result":{"role":"knowledge","protocol_version":1,"ready":true}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"error","id":"memory-m-4","service":"memory","error":{"code":"conflict","message":"stale revision","retryable":true}}`,
	`{"protocol":"agentpm-service","version":1,"kind":"event","service":"knowledge","method":"progress","payload":{"done":1}}`,
}

// reencode writes m back as a frame, the way the engine would: a request or
// event with its method and body, a reply echoing its id.
func reencode(c *envelope.Codec, m *rpc.Message, method string) []byte {
	h := &rpc.Header{Kind: m.Kind, Method: string(m.Method), Qualifier: string(m.Qualifier)}
	if m.ID != nil {
		h.ID = rpc.RawID(m.ID)
	}
	if m.Kind == rpc.KindError {
		h.Method = method
		return c.AppendError(nil, h, m.Err)
	}
	if m.Kind == rpc.KindResponse {
		h.Method = method
	}
	var out []byte
	if m.Kind == rpc.KindRequest {
		// Outbound requests get ids from the codec; write the head by hand
		// to keep the inbound id.
		out = c.AppendHead(nil, &rpc.Header{Kind: rpc.KindNotification, Method: h.Method, Qualifier: h.Qualifier})
		out = bytes.Replace(out, []byte(`"kind":"event"`), []byte(`"kind":"request","id":`+string(m.ID)), 1)
		out = out[:len(out):len(out)]
		if h.Method == "initialize" && bytes.Contains(out, []byte(`"agentpm-service"`)) {
			out = bytes.Replace(out, []byte(`"kind":"request"`), []byte(`"kind":"initialize"`), 1)
		}
	} else {
		out = c.AppendHead(nil, h)
	}
	body := m.Body
	if body == nil {
		body = []byte(c.NullBody(h))
	}
	return c.AppendTail(append(out, body...), h)
}

func TestDecodeThenEncodeIsExact(t *testing.T) {
	for _, tc := range []struct {
		p      envelope.Protocol
		frames []string
	}{{envelope.Machine, machineFrames}, {envelope.Service, serviceFrames}} {
		c := envelope.NewCodec(tc.p, "c-", "")
		method := "" // the method a reply answers, as the engine remembers it
		for _, in := range tc.frames {
			var m rpc.Message
			if err := c.Decode([]byte(in), &m); err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			if m.Kind == rpc.KindRequest {
				method = string(m.Method)
			}
			if out := reencode(c, &m, method); string(out) != in {
				t.Errorf("round trip\n in: %s\nout: %s", in, out)
			}
		}
	}
}

func TestClassification(t *testing.T) {
	c := envelope.NewCodec(envelope.Service, "", "")
	for _, tc := range []struct {
		in                       string
		kind                     rpc.Kind
		id, method, qual, body   string
		errName                  string
		errCode                  int64
		errRetryable, errMissing bool
	}{
		{in: serviceFrames[0], kind: rpc.KindRequest, id: `"req-123"`, method: "retrieve", qual: "knowledge", body: `{}`},
		{in: serviceFrames[2], kind: rpc.KindRequest, id: `"knowledge-kb-1"`, method: "initialize", qual: "knowledge", body: `{"role":"knowledge","registry_id":"kb","protocol_version":1}`},
		{in: serviceFrames[3], kind: rpc.KindResponse, id: `"knowledge-kb-1"`, qual: "knowledge", body: `{"role":"knowledge","protocol_version":1,"ready":true}`},
		// A reply without result falls back to payload.
		{in: `{"protocol":"agentpm-service","version":1,"kind":"response","id":"x","service":"s","payload":[1]}`, kind: rpc.KindResponse, id: `"x"`, qual: "s", body: `[1]`},
		{in: serviceFrames[4], kind: rpc.KindError, id: `"memory-m-4"`, qual: "memory", errName: "conflict", errRetryable: true},
		{in: `{"protocol":"agentpm-service","version":1,"kind":"error","id":"x","service":"s","error":{"code":"unsupported_capability","message":"no"}}`, kind: rpc.KindError, id: `"x"`, qual: "s", errName: "unsupported_capability", errCode: rpc.CodeMethodNotFound},
		{in: `{"protocol":"agentpm-service","version":1,"kind":"error","id":"x","service":"s"}`, kind: rpc.KindError, id: `"x"`, qual: "s", errName: "service_error", errMissing: true},
		// Unknown top-level members are ignored.
		{in: `{"vendor":{"a":[1]},"protocol":"agentpm-service","version":1,"kind":"event","service":"s","method":"m"}`, kind: rpc.KindNotification, method: "m", qual: "s"},
	} {
		var m rpc.Message
		if err := c.Decode([]byte(tc.in), &m); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if m.Kind != tc.kind || string(m.ID) != tc.id || string(m.Method) != tc.method || string(m.Qualifier) != tc.qual || string(m.Body) != tc.body {
			t.Errorf("%s:\ngot  %v id=%s method=%q qual=%q body=%s", tc.in, m.Kind, m.ID, m.Method, m.Qualifier, m.Body)
		}
		if tc.kind != rpc.KindError {
			continue
		}
		e := m.Err
		if e == nil || e.Name != tc.errName || e.Code != tc.errCode || (e.Retryable != nil) != tc.errRetryable {
			t.Errorf("%s: error %+v", tc.in, e)
		}
	}
}

func TestGates(t *testing.T) {
	m := envelope.NewCodec(envelope.Machine, "c-", "")
	s := envelope.NewCodec(envelope.Service, "kb-", "knowledge")
	for _, tc := range []struct {
		c       *envelope.Codec
		in      string
		want    error
		id      string
		claimed rpc.Kind
		reply   string // the reply's error code, "" for none
	}{
		{s, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"x","service":"knowledge","method":"retrieve"}`, envelope.ErrProtocol, `"x"`, rpc.KindRequest, "protocol_error"},
		{m, `{"protocol":"agentpm-service","version":1,"kind":"request","id":"x","method":"m"}`, envelope.ErrProtocol, `"x"`, rpc.KindRequest, "protocol_error"},
		{m, `{"protocol":"agentpm-harness-machine","version":2,"kind":"request","id":"y","method":"m"}`, envelope.ErrVersion, `"y"`, rpc.KindRequest, "protocol_error"},
		{m, `{"protocol":"agentpm-harness-machine","kind":"request","id":"w","method":"m"}`, envelope.ErrVersion, `"w"`, rpc.KindRequest, "protocol_error"},
		{m, `{"protocol":"agentpm-harness-machine","version":1,"kind":"initialize","id":"z","method":"m"}`, envelope.ErrKind, `"z"`, 0, "protocol_error"},
		{m, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"q"}`, envelope.ErrKind, `"q"`, rpc.KindRequest, "protocol_error"},
		{m, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","method":"m"}`, envelope.ErrKind, "", rpc.KindRequest, "protocol_error"},
		// A numeric id makes the line malformed: it is not echoed.
		{m, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":7,"method":"m"}`, envelope.ErrMalformed, "", 0, "malformed_json"},
		{s, `{"protocol":"agentpm-service","version":1,"kind":"request","id":7,"service":"knowledge","method":"retrieve"}`, envelope.ErrMalformed, "", 0, "malformed_frame"},
		{m, `{"protocol":"agentpm-harness-machine","version":1.5,"kind":"request","id":"v","method":"m"}`, envelope.ErrMalformed, `"v"`, 0, "malformed_json"},
		{m, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"a","method":"m"} {}`, envelope.ErrMalformed, `"a"`, 0, "malformed_json"},
		{m, `not json`, envelope.ErrMalformed, "", 0, "malformed_json"},
		{m, `[1]`, envelope.ErrMalformed, "", 0, "malformed_json"},
		{m, `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"a","id":"b","method":"m"}`, envelope.ErrMalformed, `"a"`, 0, "malformed_json"},
		// Replies that fail a gate are not answered; they fail their call.
		{s, `{"protocol":"agentpm-service","version":2,"kind":"response","id":"kb-1","service":"knowledge","result":{}}`, envelope.ErrVersion, `"kb-1"`, rpc.KindResponse, ""},
		{s, `{"protocol":"agentpm-service","version":1,"kind":"error","id":"kb-1","service":"knowledge","error":"boom"}`, envelope.ErrMalformed, `"kb-1"`, rpc.KindError, ""},
	} {
		var msg rpc.Message
		err := tc.c.Decode([]byte(tc.in), &msg)
		fe, ok := errors.AsType[*rpc.FrameError](err)
		if !ok || !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.in, err, tc.want)
			continue
		}
		if fe.ID.String() != tc.id || fe.Claimed != tc.claimed {
			t.Errorf("%s: id %s claimed %v, want %s %v", tc.in, fe.ID, fe.Claimed, tc.id, tc.claimed)
		}
		switch {
		case tc.reply == "" && fe.Reply != nil:
			t.Errorf("%s: answered with %v", tc.in, fe.Reply)
		case tc.reply != "" && (fe.Reply == nil || fe.Reply.Name != tc.reply):
			t.Errorf("%s: reply %+v, want code %s", tc.in, fe.Reply, tc.reply)
		}
	}
}

func TestEncode(t *testing.T) {
	m := envelope.NewCodec(envelope.Machine, "c-", "")
	s := envelope.NewCodec(envelope.Service, "knowledge-kb-", "knowledge")
	yes := true
	for _, tc := range []struct {
		c    *envelope.Codec
		h    rpc.Header
		body string
		e    *rpc.Error
		want string
	}{
		{c: m, h: rpc.Header{Kind: rpc.KindRequest, Seq: 1, Method: "start_run"}, body: `{"input":"Summarize the incident."}`,
			want: `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"c-1","method":"start_run","payload":{"input":"Summarize the incident."}}`},
		{c: m, h: rpc.Header{Kind: rpc.KindRequest, Seq: 2, Method: "shutdown"},
			want: `{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"c-2","method":"shutdown","payload":{}}`},
		{c: m, h: rpc.Header{Kind: rpc.KindResponse, ID: rpc.StringID("host-model-m-1"), Method: "host_service"}, body: `{"actions":[]}`,
			want: `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"host-model-m-1","payload":{"actions":[]}}`},
		{c: m, h: rpc.Header{Kind: rpc.KindNotification, Method: "preflight"}, body: `{"status":"ready"}`,
			want: `{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"preflight","payload":{"status":"ready"}}`},
		{c: m, h: rpc.Header{Kind: rpc.KindError, ID: rpc.StringID("req-2")}, e: &rpc.Error{Name: "session_busy", Message: "a Harness Run is already active in this Session"},
			want: machineFrames[4]},
		{c: m, h: rpc.Header{Kind: rpc.KindError}, e: rpc.MethodNotFound("nope"),
			want: `{"protocol":"agentpm-harness-machine","version":1,"kind":"error","payload":null,"error":{"code":"unknown_method","message":"method not found: nope"}}`},
		{c: s, h: rpc.Header{Kind: rpc.KindRequest, Seq: 1, Method: "initialize", Qualifier: "knowledge"}, body: `{"role":"knowledge"}`,
			want: `{"protocol":"agentpm-service","version":1,"kind":"initialize","id":"knowledge-kb-1","service":"knowledge","method":"initialize","payload":{"role":"knowledge"}}`},
		{c: s, h: rpc.Header{Kind: rpc.KindResponse, ID: rpc.StringID("knowledge-kb-1"), Method: "initialize", Qualifier: "knowledge"}, body: `{"ready":true}`,
			want: `{"protocol":"agentpm-service","version":1,"kind":"initialized","id":"knowledge-kb-1","service":"knowledge","result":{"ready":true}}`},
		{c: s, h: rpc.Header{Kind: rpc.KindResponse, ID: rpc.StringID("req-123"), Method: "retrieve", Qualifier: "knowledge"}, body: `{}`,
			want: serviceFrames[1]},
		{c: s, h: rpc.Header{Kind: rpc.KindError, ID: rpc.StringID("memory-m-4"), Qualifier: "memory"}, e: &rpc.Error{Name: "conflict", Message: "stale revision", Retryable: &yes},
			want: serviceFrames[4]},
		// An error frame for a request whose role is unknown carries the codec's role.
		{c: s, h: rpc.Header{Kind: rpc.KindError}, e: rpc.ErrParse,
			want: `{"protocol":"agentpm-service","version":1,"kind":"error","service":"knowledge","error":{"code":"malformed_frame","message":"parse error","retryable":false}}`},
	} {
		var out []byte
		if tc.e != nil {
			out = tc.c.AppendError(nil, &tc.h, tc.e)
		} else {
			out = tc.c.AppendHead(nil, &tc.h)
			body := tc.body
			if body == "" {
				body = tc.c.NullBody(&tc.h)
			}
			out = tc.c.AppendTail(append(out, body...), &tc.h)
		}
		if string(out) != tc.want {
			t.Errorf("got\n%swant\n%s", out, tc.want)
		}
	}
}

func TestSeq(t *testing.T) {
	c := envelope.NewCodec(envelope.Service, "knowledge-kb-", "")
	id := c.AppendID(nil, 42)
	if string(id) != `"knowledge-kb-42"` {
		t.Fatalf("id %s", id)
	}
	for _, tc := range []struct {
		id string
		ok bool
	}{{`"knowledge-kb-42"`, true}, {`"knowledge-kb-0"`, false}, {`"other-42"`, false}, {`42`, false}, {`"knowledge-kb-x"`, false}, {`"`, false}} {
		n, ok := c.Seq([]byte(tc.id))
		if ok != tc.ok || ok && n != 42 {
			t.Errorf("Seq(%s) = %d, %v", tc.id, n, ok)
		}
	}
}

func TestIDPrefixMustNeedNoEscaping(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a prefix with a quote was accepted")
		}
	}()
	envelope.NewCodec(envelope.Machine, `c"`, "")
}

func FuzzDecode(f *testing.F) {
	for _, s := range append(machineFrames, serviceFrames...) {
		f.Add([]byte(s))
	}
	codecs := []*envelope.Codec{envelope.NewCodec(envelope.Machine, "c-", ""), envelope.NewCodec(envelope.Service, "c-", "r")}
	roles := []string{"", "r"}
	f.Fuzz(func(t *testing.T, line []byte) {
		for i, c := range codecs {
			var m rpc.Message
			err := c.Decode(line, &m)
			if err != nil {
				fe, ok := errors.AsType[*rpc.FrameError](err)
				if !ok {
					t.Fatalf("%q: error %v is not a *rpc.FrameError", line, err)
				}
				if fe.Reply != nil && fe.Reply.Name == "" {
					t.Fatalf("%q: reply without a code name: %+v", line, fe.Reply)
				}
				continue
			}
			// What decodes re-encodes to a frame that decodes the same.
			method := string(m.Method)
			out := reencode(c, &m, method)
			var again rpc.Message
			if err := c.Decode(out, &again); err != nil {
				t.Fatalf("re-encoded frame does not decode: %v\n%s", err, out)
			}
			// A reply this side writes without a qualifier names its role.
			qualifier := string(m.Qualifier)
			if qualifier == "" && (m.Kind == rpc.KindResponse || m.Kind == rpc.KindError) {
				qualifier = roles[i]
			}
			if again.Kind != m.Kind || string(again.ID) != string(m.ID) || string(again.Qualifier) != qualifier {
				t.Fatalf("re-encoding changed the frame:\n%q\n%s", line, out)
			}
		}
	})
}

// Decode checks the compatibility gates; a frame that fails one is still
// answered with an error frame that echoes its id.
func ExampleCodec_Decode() {
	c := envelope.NewCodec(envelope.Machine, "c-", "")
	var m rpc.Message
	err := c.Decode([]byte(`{"protocol":"agentpm-harness-machine","version":2,"kind":"request","id":"c-1","method":"initialize","payload":{}}`), &m)
	fe, _ := errors.AsType[*rpc.FrameError](err)
	fmt.Println(errors.Is(err, envelope.ErrVersion))
	fmt.Printf("%s", c.AppendError(nil, &rpc.Header{Kind: rpc.KindError, ID: fe.ID}, fe.Reply))
	// Output:
	// true
	// {"protocol":"agentpm-harness-machine","version":1,"kind":"error","id":"c-1","payload":null,"error":{"code":"protocol_error","message":"unsupported protocol version 2; expected 1"}}
}

// FuzzDecodeReference checks Decode against a reference written with
// json.Unmarshal (DecodeReference): both take the same lines into the same
// message, and refuse the same lines for the same reason.
func FuzzDecodeReference(f *testing.F) {
	for _, s := range append(machineFrames, serviceFrames...) {
		f.Add([]byte(s))
	}
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	codecs := []*envelope.Codec{envelope.NewCodec(envelope.Machine, "c-", ""), envelope.NewCodec(envelope.Service, "c-", "r")}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, c := range codecs {
			var got, want rpc.Message
			err := c.Decode(line, &got)
			werr := envelope.DecodeReference(c, line, &want)
			if (err == nil) != (werr == nil) {
				t.Fatalf("%q: Decode says %v, the reference %v", line, err, werr)
			}
			if err != nil {
				fe, _ := errors.AsType[*rpc.FrameError](err)
				we, _ := errors.AsType[*rpc.FrameError](werr)
				same := fe != nil && we != nil && fe.Kind == we.Kind && fe.ID == we.ID && fe.Claimed == we.Claimed && (fe.Reply == nil) == (we.Reply == nil)
				for _, s := range []error{envelope.ErrMalformed, envelope.ErrProtocol, envelope.ErrVersion, envelope.ErrKind} {
					same = same && errors.Is(err, s) == errors.Is(werr, s)
				}
				if !same {
					t.Fatalf("%q: Decode says %v, the reference %v", line, err, werr)
				}
				continue
			}
			if got.Kind != want.Kind || !bytes.Equal(got.ID, want.ID) || !bytes.Equal(got.Method, want.Method) || (got.Method == nil) != (want.Method == nil) ||
				!bytes.Equal(got.Qualifier, want.Qualifier) || !bytes.Equal(got.Body, want.Body) || (got.Body == nil) != (want.Body == nil) ||
				(got.Err == nil) != (want.Err == nil) || got.Err != nil && (got.Err.Name != want.Err.Name || got.Err.Code != want.Err.Code || got.Err.Message != want.Err.Message) {
				t.Fatalf("%q: Decode %+v, the reference %+v", line, got, want)
			}
		}
	})
}

// fastSeeds are frames at the edges of the fast path: ones it takes and
// ones it must leave to the slow path.
var fastSeeds = []string{
	` { "protocol" : "agentpm-harness-machine" , "version" : 1 , "kind" : "request" , "id" : "a\"b" , "method" : "start_run" , "payload" : { "input" : "x" } } `,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"harness_event","payload":null,"extra":[1,2]}`,
	`{"protocol":"agentpm-harness-machine","version":1.0,"kind":"request","id":"1","method":"initialize","payload":{}}`,
	`{"protocol":"agentpm-harness-machine","version":01,"kind":"request","id":"1","method":"initialize"}`,
	`{"protocol":"agentpm-harness-machine","version":-1,"kind":"request","id":"1","method":"initialize"}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":1,"method":"initialize"}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"1","method":null}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"1","method":"init\u0069alize"}`,
	`{"protocol":"agentpm-harness-m\u0061chine","version":1,"kind":"request","id":"1","method":"initialize"}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"error","id":"1","error":{"code":"session_busy","message":"busy"}}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"1","payload":{"ok":true},"result":{"no":1}}`,
	`{"protocol":"agentpm-service","version":1,"service":"knowledge","kind":"response","id":"knowledge-kb-1","result":{"results":[]}}`,
	`{"protocol":"agentpm-service","version":1,"service":5,"kind":"request","id":"1","method":"retrieve"}`,
	`{"protocol":"agentpm-service","version":1,"kind":"initialized","id":"1","method":"initialize"}`,
	`{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"1","method":"a","method":"b"}`,
}

// FuzzDecodeHead cuts frames anywhere: what DecodeHead reads from the start
// of a frame never contradicts what Decode reads from the whole of it, and
// a cut value is never taken for a whole one.
func FuzzDecodeHead(f *testing.F) {
	for _, s := range append(machineFrames, serviceFrames...) {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Add([]byte(`{"protocol":"agentpm-service","version":1,"kind":"response","id":"k-12","result":{}}`), uint16(65))
	codecs := []*envelope.Codec{envelope.NewCodec(envelope.Machine, "c-", ""), envelope.NewCodec(envelope.Service, "c-", "r")}
	f.Fuzz(func(t *testing.T, line []byte, cut uint16) {
		n := int(cut) % (len(line) + 1)
		for _, c := range codecs {
			kind, id := c.DecodeHead(line[:n])
			if id != nil && (!bytes.Contains(line[:n], id) || id[0] != '"' || kind == 0) {
				t.Fatalf("DecodeHead(%q) = %v %q", line[:n], kind, id)
			}
			var m rpc.Message
			if kind == 0 || c.Decode(line, &m) != nil {
				continue
			}
			if kind != m.Kind || id != nil && !bytes.Equal(id, m.ID) {
				t.Fatalf("DecodeHead(%q) = %v %q; the whole frame %q is %v %q", line[:n], kind, id, line, m.Kind, m.ID)
			}
		}
	})
}

// DecodeHead reads the kind as Decode does, escapes included: an over-long request whose kind is written
// "r\u0065quest" is still a request, answered under its id.
func TestDecodeHeadEscapedKind(t *testing.T) {
	c := envelope.NewCodec(envelope.Machine, "c-", "")
	for _, tc := range []struct {
		head string
		kind rpc.Kind
		id   string
	}{
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"r\u0065quest","id":"7","payload":{"text":"aaa`, rpc.KindRequest, `"7"`},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"\u0065vent","method":"m","payload":[1,2`, rpc.KindNotification, ""},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":"r\u0065ply","id":"7","payload":{"text":"aaa`, 0, ""},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":null,"id":"7","payload":{"text":"aaa`, 0, ""},
		{`{"protocol":"agentpm-harness-machine","version":1,"kind":3,"id":"7","payload":{"text":"aaa`, 0, ""},
	} {
		kind, id := c.DecodeHead([]byte(tc.head))
		if kind != tc.kind || string(id) != tc.id {
			t.Errorf("DecodeHead(%s) = %v, %s; want %v, %s", tc.head, kind, id, tc.kind, tc.id)
		}
	}
}
