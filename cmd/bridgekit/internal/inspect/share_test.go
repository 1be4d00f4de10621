package inspect

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

func sessionInto(t *testing.T, mem *Memory, id string, lines ...string) {
	t.Helper()
	recs := session(t, id, lines...)
	mem.Put(&tracelog.Record{Type: tracelog.TypeSession, Session: id, Time: recs[0].Time, Version: tracelog.Version, Command: []string{"agent", "--flag"}})
	for _, r := range recs {
		mem.Put(r)
	}
	st := 0
	mem.Put(&tracelog.Record{Type: tracelog.TypeEnd, Session: id, Seq: int64(len(recs) + 1), Time: recs[len(recs)-1].Time, Status: &st})
}

// Export writes the session as a trace, secrets masked as trace masks
// them; importing it back shows the same frames, classified afresh, under
// a new name beside the original.
func TestExportImportRoundTrip(t *testing.T) {
	mem := NewMemory(1 << 20)
	sessionInto(t, mem, "s1",
		`> {"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"key","_meta":{"apiKey":"sk-live-abcdefghijklmnop1234"}}}`,
		`< {"jsonrpc":"2.0","id":1,"result":{}}`,
		`> {"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`,
	)
	srv := httptest.NewServer(Handler(mem, true))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/export?session=s1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename=s1.jsonl`) {
		t.Fatalf("export: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if bytes.Contains(body, []byte("sk-live-abcdefghijklmnop1234")) || !bytes.Contains(body, []byte("[REDACTED]")) {
		t.Fatalf("the secret was exported:\n%s", body)
	}
	recs, err := tracelog.ReadAll(bytes.NewReader(body))
	if err != nil || len(recs) != 5 || recs[0].Type != tracelog.TypeSession || recs[4].Type != tracelog.TypeEnd || !recs[1].Redacted || recs[2].Redacted {
		t.Fatalf("%d records, %v: %s", len(recs), err, body)
	}

	post := func(name, ctype, origin string, body []byte) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/import?name="+name, bytes.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, out := post("s1.jsonl", "application/x-ndjson", "", body)
	if code != 200 || !strings.Contains(out, `"s1 (imported 1)"`) {
		t.Fatalf("import: %d %s", code, out)
	}
	code, out = post("s1.jsonl", "application/x-ndjson", srv.URL, body)
	if code != 200 || !strings.Contains(out, `"s1 (imported 2)"`) {
		t.Fatalf("import again: %d %s", code, out)
	}
	// The imported session: its frames classified again (the reply paired
	// with its request), listed beside the others.
	resp, err = http.Get(srv.URL + "/api/records?session=" + url.QueryEscape("s1 (imported 1)"))
	if err != nil {
		t.Fatal(err)
	}
	var got []*tracelog.Record
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if len(got) != 4 || got[1].ReplyTo != 1 || got[1].Method != "authenticate" || !got[0].Redacted || got[3].Type != tracelog.TypeEnd {
		t.Errorf("imported: %+v", got)
	}
	resp, _ = http.Get(srv.URL + "/api/sessions")
	var ss []struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&ss)
	resp.Body.Close()
	if len(ss) != 3 {
		t.Errorf("sessions %+v", ss)
	}

	// What is refused: another page's post, a simple content type, no
	// traffic, a store.
	if code, _ := post("x", "application/x-ndjson", "http://evil.example", body); code != http.StatusForbidden {
		t.Errorf("another origin: %d", code)
	}
	if code, _ := post("x", "text/plain", "", body); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", code)
	}
	if code, out := post("x", "application/x-ndjson", "", []byte("hello\n")); code != http.StatusUnprocessableEntity || !strings.Contains(out, "cannot import") {
		t.Errorf("junk: %d %s", code, out)
	}
	if code, out := post("x", "application/x-ndjson", "", []byte("SQLite format 3\x00....")); code != http.StatusUnprocessableEntity || !strings.Contains(out, "session store") {
		t.Errorf("a store: %d %s", code, out)
	}
	if resp, _ := http.Get(srv.URL + "/api/export?session=nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("export of no session: %d", resp.StatusCode)
	}
}
