package service

import (
	"errors"
	"testing"

	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/envelope"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func newTestIDs() *ids {
	k := &ids{codec: agentpmservice.NewCodec("knowledge-kb-", "").(*envelope.Codec), role: "knowledge"}
	k.last.Store(4)
	return k
}

// decode reads line as the provider's connection does: the codec, then
// the client's screen, then its bad-frame policy.
func (k *ids) decode(line []byte, m *rpc.Message) error {
	err := k.codec.Decode(line, m)
	if err == nil {
		if fe := k.screen(m); fe != nil {
			err = fe
		}
	}
	if fe, ok := err.(*rpc.FrameError); ok {
		if k.badFrame(fe, line) {
			panic("a bad frame of the provider ended the connection")
		}
	}
	return err
}

// The client never answers the provider, sends every rejected reply to the
// call whose id it carries or, when no id can be read, to the pending call,
// and numbers ids after its base.
func TestProviderFrames(t *testing.T) {
	k := newTestIDs()
	head := string(k.codec.AppendHead(nil, &rpc.Header{Kind: rpc.KindRequest, Seq: k.next(), Method: "retrieve", Qualifier: "knowledge"}))
	if want := `{"protocol":"agentpm-service","version":1,"kind":"request","id":"knowledge-kb-5","service":"knowledge","method":"retrieve","payload":`; head != want || k.last.Load() != 5 || k.pending.Load() != 5 {
		t.Errorf("head %s, last %d, pending %d", head, k.last.Load(), k.pending.Load())
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
		err := k.decode([]byte(tc.line), &m)
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
	if fe, ok := k.decode([]byte(`garbage`), &m).(*rpc.FrameError); !ok || !fe.ID.IsZero() || fe.Claimed != 0 || fe.Reply != nil {
		t.Errorf("garbage with nothing pending: %+v", fe)
	}
}

func FuzzProviderFrames(f *testing.F) {
	f.Add([]byte(`{"protocol":"agentpm-service","version":1,"kind":"response","id":"knowledge-kb-5","service":"knowledge","result":{}}`))
	f.Add([]byte(`{"protocol":"agentpm-service","version":1,"kind":"error","id":"knowledge-kb-9","service":"knowledge","error":{"code":"x","message":"y","retryable":true}}`))
	f.Add([]byte(`{"protocol":"agentpm-service","version":1,"kind":"initialized","id":7}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		k := newTestIDs()
		k.pending.Store(5)
		var m rpc.Message
		err := k.decode(line, &m)
		if fe, ok := err.(*rpc.FrameError); ok && fe.Reply != nil {
			t.Fatalf("the provider's line %q would be answered", line)
		}
		if err == nil && (m.Kind == rpc.KindResponse || m.Kind == rpc.KindError) && string(m.Qualifier) != "knowledge" {
			t.Fatalf("a reply of another role was accepted: %q", line)
		}
	})
}
