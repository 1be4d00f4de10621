package service

import (
	"errors"
	"testing"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func newTestCodec() *codec {
	return &codec{Codec: agentpmservice.NewCodec("knowledge-kb-", "").(*envelope.Codec), role: "knowledge", base: 4}
}

// The client's codec never answers the provider, sends every rejected reply
// to the call whose id it carries or, when no id can be read, to the pending
// call, and numbers ids after its base.
func TestCodec(t *testing.T) {
	k := newTestCodec()
	head := string(k.AppendHead(nil, &rpc.Header{Kind: rpc.KindRequest, Seq: 1, Method: "retrieve", Qualifier: "knowledge"}))
	if want := `{"protocol":"agentpm-service","version":1,"kind":"request","id":"knowledge-kb-5","service":"knowledge","method":"retrieve","payload":`; head != want || k.last.Load() != 5 {
		t.Errorf("head %s, last %d", head, k.last.Load())
	}
	for _, tc := range []struct {
		line string
		want error
		// id is the id of the call the line fails (or answers)
		id string
	}{
		{`{"protocol":"agentpm-service","version":1,"kind":"response","id":"knowledge-kb-5","service":"memory","result":{}}`, ErrWrongRole, `"knowledge-kb-5"`},
		{`{"protocol":"agentpm-service","version":1,"kind":"error","id":"knowledge-kb-5","error":{"code":"x","message":"y"}}`, ErrWrongRole, `"knowledge-kb-5"`},
		{`{"protocol":"agentpm-service","version":2,"kind":"response","id":"knowledge-kb-5","service":"knowledge","result":{}}`, envelope.ErrVersion, `"knowledge-kb-5"`},
		{`{"protocol":"agentpm-service","version":1,"kind":"response","id":5,"service":"knowledge","result":{}}`, envelope.ErrMalformed, `"knowledge-kb-5"`},
		{`not json`, envelope.ErrMalformed, `"knowledge-kb-5"`},
		{`{"protocol":"agentpm-service","version":1,"kind":"request","id":"x","service":"knowledge","method":"m","payload":{}}`, envelope.ErrKind, ``},
		{`{"protocol":"agentpm-service","version":1,"kind":"event","service":"knowledge","method":"progress","payload":{}}`, nil, ``},
		{`{"protocol":"agentpm-service","version":1,"kind":"event","id":"knowledge-kb-4","service":"knowledge","method":"progress","payload":{}}`, nil, ``},
		{`{"protocol":"agentpm-service","version":1,"kind":"event","id":"knowledge-kb-5","service":"knowledge","method":"progress","payload":{}}`, envelope.ErrKind, `"knowledge-kb-5"`},
		{`{"protocol":"agentpm-service","version":1,"kind":"response","id":"knowledge-kb-5","service":"knowledge","result":{}}`, nil, `"knowledge-kb-5"`},
	} {
		k.pending.Store(5) // request 5 waits for its answer
		var m rpc.Message
		err := k.Decode([]byte(tc.line), &m)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.line, err, tc.want)
		}
		if fe, ok := err.(*rpc.FrameError); ok {
			if fe.Reply != nil || fe.ID.String() != tc.id || (tc.id != "" && fe.Claimed != rpc.KindResponse) {
				t.Errorf("%s: %+v", tc.line, fe)
			}
		}
		if answered := k.pending.Load() == 0; answered != (tc.id != "") {
			t.Errorf("%s: pending cleared %v", tc.line, answered)
		}
	}
	// A line without an id when nothing is pending fails nothing.
	var m rpc.Message
	if fe, ok := k.Decode([]byte(`garbage`), &m).(*rpc.FrameError); !ok || !fe.ID.IsZero() || fe.Claimed != 0 || fe.Reply != nil {
		t.Errorf("garbage with nothing pending: %+v", fe)
	}
	if seq, ok := k.Seq([]byte(`"knowledge-kb-5"`)); !ok || seq != 1 {
		t.Errorf("Seq: %d %v", seq, ok)
	}
	if _, ok := k.Seq([]byte(`"knowledge-kb-4"`)); ok {
		t.Error("an id of the previous process matched")
	}
}

func FuzzCodec(f *testing.F) {
	f.Add([]byte(`{"protocol":"agentpm-service","version":1,"kind":"response","id":"knowledge-kb-5","service":"knowledge","result":{}}`))
	f.Add([]byte(`{"protocol":"agentpm-service","version":1,"kind":"error","id":"knowledge-kb-9","service":"knowledge","error":{"code":"x","message":"y","retryable":true}}`))
	f.Add([]byte(`{"protocol":"agentpm-service","version":1,"kind":"initialized","id":7}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		k := newTestCodec()
		k.pending.Store(5)
		var m rpc.Message
		err := k.Decode(line, &m)
		if fe, ok := err.(*rpc.FrameError); ok && fe.Reply != nil {
			t.Fatalf("the provider's line %q would be answered", line)
		}
		if err == nil && (m.Kind == rpc.KindResponse || m.Kind == rpc.KindError) && string(m.Qualifier) != "knowledge" {
			t.Fatalf("a reply of another role was accepted: %q", line)
		}
	})
}
