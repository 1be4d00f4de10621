package remote

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/runtime/sse"
)

// With the draft cursor, SSE events carry their event ids (in the id field and in _meta["acp/cursor"]), and a GET with Last-Event-ID gets the
// stream again after that id; a cursor the log no longer covers gets 410.
func TestDraftCursor(t *testing.T) {
	_, hs, _ := startServer(t, &Options{DraftCursor: true, MaxLogBytes: 4096})
	conn := initHTTP(t, hs.URL)
	var get func(lastEventID string) (*http.Response, context.CancelFunc)
	get = func(lastEventID string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(HeaderConnectionID, conn)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusConflict {
			// The server has not yet seen the end of the stream's previous reader: ask again.
			resp.Body.Close()
			cancel()
			return get(lastEventID)
		}
		return resp, cancel
	}
	resp, cancel := get("")
	for i := 1; i <= 3; i++ {
		if r, b := post(t, hs.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{}}`, i), "Acp-Connection-Id: "+conn); r.StatusCode != 202 {
			t.Fatalf("POST: %d %s", r.StatusCode, b)
		}
	}
	d := sse.NewDecoder(resp.Body, 0)
	var ids []string
	for len(ids) < 3 {
		ev, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ev.HasID || !strings.Contains(string(ev.Data), `"sessionId":"sess-`) {
			t.Fatalf("event %q id %q", ev.Data, ev.ID)
		}
		// The draft's copy of the cursor, in the result's _meta.
		if !strings.HasSuffix(string(ev.Data), `,"_meta":{"acp/cursor":"`+ev.ID+`"}}}`) {
			t.Fatalf("event %q id %q: no _meta cursor", ev.Data, ev.ID)
		}
		ids = append(ids, ev.ID)
	}
	cancel()
	resp.Body.Close()
	// Again from the first id: the second and third events, with their ids.
	resp, cancel = get(ids[0])
	defer cancel()
	defer resp.Body.Close()
	d = sse.NewDecoder(resp.Body, 0)
	for _, want := range ids[1:] {
		ev, err := d.Next()
		if err != nil || ev.ID != want || !strings.Contains(string(ev.Data), `"acp/cursor":"`+want+`"`) {
			t.Fatalf("replayed %q id %q (%v), want id %s, the same in _meta", ev.Data, ev.ID, err, want)
		}
	}
	cancel()
	// Push the first events out of the log (4 KiB a stream): the agent's answers echo long ids.
	long := strings.Repeat("x", 900)
	for i := 0; i < 6; i++ {
		if r, b := post(t, hs.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s-%d","method":"nope","params":{}}`, long, i), "Acp-Connection-Id: "+conn); r.StatusCode != 202 {
			t.Fatalf("POST: %d %s", r.StatusCode, b)
		}
	}
	// The answers are in the log once a reader of the stream has seen them (or once the stream cannot
	// be read from the third event on: they pushed it out).
	resp, cancel = get(ids[2])
	if resp.StatusCode == http.StatusOK {
		d = sse.NewDecoder(resp.Body, 0)
		for i := 0; i < 6; i++ {
			if _, err := d.Next(); err != nil {
				break // the answers pushed the stream's next events out while it was read: the server ended it
			}
		}
	}
	cancel()
	resp.Body.Close()
	r, cancel2 := get(ids[0])
	defer cancel2()
	r.Body.Close()
	if r.StatusCode != 410 {
		t.Fatalf("a cursor the log dropped: %d", r.StatusCode)
	}
}

// The log's bound in all holds across connections: one connection's output pushes another's oldest
// frames out, and the other, resuming, is told (410) rather than given a gap.
func TestLogTotalAcrossConnections(t *testing.T) {
	_, hs, _ := startServer(t, &Options{DraftCursor: true, MaxLogTotalBytes: 4096})
	open := func(conn, lastEventID string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(HeaderConnectionID, conn)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, cancel
	}
	a, b := initHTTP(t, hs.URL), initHTTP(t, hs.URL)
	if r, body := post(t, hs.URL, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`, "Acp-Connection-Id: "+a); r.StatusCode != 202 {
		t.Fatalf("POST: %d %s", r.StatusCode, body)
	}
	resp, cancel := open(a, "")
	ev, err := sse.NewDecoder(resp.Body, 0).Next()
	cancel()
	resp.Body.Close()
	if err != nil || !strings.Contains(string(ev.Data), `"sessionId"`) {
		t.Fatalf("a's first event: %q %v", ev.Data, err)
	}
	// b's answers, 6 of about 950 bytes, pass 4 KiB in all: a's event goes (and b's first ones).
	long := strings.Repeat("x", 900)
	for i := 0; i < 6; i++ {
		if r, body := post(t, hs.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s-%d","method":"nope","params":{}}`, long, i), "Acp-Connection-Id: "+b); r.StatusCode != 202 {
			t.Fatalf("POST: %d %s", r.StatusCode, body)
		}
	}
	if r, body := post(t, hs.URL, `{"jsonrpc":"2.0","id":7,"method":"session/new","params":{}}`, "Acp-Connection-Id: "+b); r.StatusCode != 202 {
		t.Fatalf("POST: %d %s", r.StatusCode, body)
	}
	// Once b's seventh event is read, the six before it are in the log.
	resp, cancel = open(b, "6")
	ev, err = sse.NewDecoder(resp.Body, 0).Next()
	cancel()
	resp.Body.Close()
	if err != nil || ev.ID != "7" {
		t.Fatalf("b's seventh event: %q id %q %v", ev.Data, ev.ID, err)
	}
	resp, cancel = open(a, "0")
	defer cancel()
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("a resuming from 0 after b filled the log: %d", resp.StatusCode)
	}
}
