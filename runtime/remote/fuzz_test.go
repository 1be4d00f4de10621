package remote

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzPeek: the classification of an inbound message (the WebSocket and HTTP servers' first step) never
// panics and agrees with a full decode: unparsable exactly when jsontext refuses it; a request has a
// method and a valid id; the session id is params.sessionId.
func FuzzPeek(f *testing.F) {
	for _, s := range []string{initBody, `[1]`, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0031"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"x"}}`, `{"jsonrpc":"2.0","id":{},"method":"x"}`, `nul`, `"s"`,
		`{"jsonrpc":"2.0","id":1,"method":"m","_harn":{"eventId":7}}`,
		`{"jsonrpc":"2.0","method":"m","params":{"a":{"sessionId":"no"},"session\u0049d":"s"}}`,
		`{"jsonrpc":"2.0","id":"7","result":{"text":"sessionId","sessionId":"s"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p peeker
		m := p.peek(b)
		valid := jsontext.Value(b).IsValid()
		if (m.kind == kindUnparsable) == valid {
			t.Fatalf("%q: kind %d, jsontext valid %v", b, m.kind, valid)
		}
		if !valid {
			return
		}
		var full struct {
			JSONRPC jsontext.Value `json:"jsonrpc"`
			ID      jsontext.Value `json:"id"`
			Method  jsontext.Value `json:"method"`
			Params  jsontext.Value `json:"params"`
			Result  jsontext.Value `json:"result"`
		}
		if json.Unmarshal(b, &full) != nil {
			return // an array or a primitive
		}
		switch m.kind {
		case kindRequest, kindNotification:
			var method string
			if json.Unmarshal(full.Method, &method) != nil || method != m.method || method == "" {
				t.Fatalf("%q: method %q", b, m.method)
			}
			if (m.kind == kindRequest) != (full.ID != nil) {
				t.Fatalf("%q: kind %d", b, m.kind)
			}
		}
		// The session id is the sessionId member of params (result of a response), found whenever it
		// is a string.
		from := full.Params
		if m.kind == kindResponse {
			from = full.Result
		}
		var inner struct {
			SessionID jsontext.Value `json:"sessionId"`
		}
		var sid string
		if (m.kind == kindRequest || m.kind == kindNotification || m.kind == kindResponse) &&
			json.Unmarshal(from, &inner) == nil && json.Unmarshal(inner.SessionID, &sid) == nil {
			if !m.hasSess || sid != m.sessionID {
				t.Fatalf("%q: session %q (%v), want %q", b, m.sessionID, m.hasSess, sid)
			}
		} else if m.hasSess {
			t.Fatalf("%q: session %q found where there is none", b, m.sessionID)
		}
		// What a client's transport records of a frame it writes: the id of a request.
		kind, id := m.kind, slices.Clone(m.id)
		var w peeker
		if rid, ok := w.requestID(b); ok != (kind == kindRequest) || ok && !bytes.Equal(rid, id) {
			t.Fatalf("%q: requestID %q %v, peek kind %d id %q", b, rid, ok, kind, id)
		}
		if m.kind == kindRequest || m.kind == kindResponse {
			if !bytes.Equal(bytes.TrimSpace(m.id), bytes.TrimSpace(full.ID)) {
				t.Fatalf("%q: id %q", b, m.id)
			}
		}
		// A head of the frame is read without a panic either.
		p.peekHead(b[:len(b)/2])
	})
}

// FuzzStamp: the event id added to every WebSocket frame keeps the frame valid JSON with every member it
// had, and adds a _harn member only where there was none.
func FuzzStamp(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"x","params":{}}`), "sess")
	f.Add([]byte(`{}`), "")
	f.Add([]byte(` { "a" : 1 } `), "s\"\x00é")
	f.Add([]byte(`{"_harn":{"eventId":1}}`), "")
	f.Fuzz(func(t *testing.T, b []byte, session string) {
		var p peeker
		m := p.peek(b)
		if m.kind == kindUnparsable || m.kind == kindBatch || m.kind == kindNotObject {
			return
		}
		out := stamp(b, m, 42, session, true)
		var before, after map[string]jsontext.Value
		if err := json.Unmarshal(b, &before); err != nil {
			return
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%q stamped %q: %v", b, out, err)
		}
		for k, v := range before {
			if !bytes.Equal(after[k], v) {
				t.Fatalf("%q stamped %q: member %q changed", b, out, k)
			}
		}
		if _, had := before["_harn"]; !had {
			var h struct {
				EventID  uint64 `json:"eventId"`
				Replayed bool   `json:"replayed"`
			}
			if json.Unmarshal(after["_harn"], &h) != nil || h.EventID != 42 || !h.Replayed || len(after) != len(before)+1 {
				t.Fatalf("%q stamped %q", b, out)
			}
		}
	})
}

// FuzzPOST: whatever body and headers a POST carries, the server answers with a status of the
// reference's table and never panics.
func FuzzPOST(f *testing.F) {
	f.Add([]byte(initBody), "application/json", "", "")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"a"}}`), "application/json; charset=utf-8", "x", "b")
	f.Add([]byte(`[`), "text/plain", "", "")
	fb := &fakeBackend{}
	s := NewServer(fb.start, &Options{MaxFrame: 1 << 12})
	defer func() { s.Close(); fb.wait() }()
	allowed := []int{200, 202, 400, 404, 413, 415, 499, 500, 503}
	f.Fuzz(func(t *testing.T, body []byte, contentType, conn, session string) {
		req := httptest.NewRequest(http.MethodPost, "/acp", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if conn != "" && !strings.ContainsAny(conn, "\r\n\x00") {
			req.Header.Set(HeaderConnectionID, conn)
		}
		if session != "" && !strings.ContainsAny(session, "\r\n\x00") {
			req.Header.Set(HeaderSessionID, session)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if !slices.Contains(allowed, w.Code) {
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}
