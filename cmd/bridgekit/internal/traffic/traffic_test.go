package traffic_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
)

const (
	initReq  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`
	initResp = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}`
	chunk    = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`
	typo     = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_mesage_chunk","content":{"type":"text","text":"hi"}}}}`
	noID     = `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`
)

func write(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func traceOf(lines ...string) string {
	var b strings.Builder
	b.WriteString(`{"type":"session","session":"t","seq":0,"time":"2026-12-06T10:00:00Z","v":1,"command":["agent"]}` + "\n")
	for i, l := range lines {
		dir := "in"
		if strings.Contains(l, `"result"`) || strings.Contains(l, "session/update") {
			dir = "out"
		}
		rec := &tracelog.Record{Type: tracelog.TypeFrame, Session: "t", Seq: int64(i + 1), Dir: frames.Direction(dir),
			Time: time.Date(2026, 12, 6, 10, 0, 0, (i+1)*int(time.Millisecond), time.UTC), Size: len(l)}
		rec.SetLine([]byte(l))
		out, err := rec.Marshal(nil)
		if err != nil {
			panic(err)
		}
		b.Write(out)
	}
	return b.String()
}

// Sniff tells every form the subcommands read, and refuses, naming the
// file and the reason, what is none of them.
func TestSniff(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "s.db")
	db, err := store.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, c := range []struct {
		name, path string
		want       traffic.Format
	}{
		{"trace", write(t, "t.jsonl", traceOf(initReq, initResp)), traffic.Trace},
		{"empty (a trace being written)", write(t, "e.jsonl", ""), traffic.Trace},
		{"recording", write(t, "r.jsonl", `{"seq":1,"ms":0.5,"dir":"send","line":"{}"}`+"\n"), traffic.Recording},
		{"tee log", write(t, "tee.log", initReq+"\n"+initResp+"\n"+chunk+"\n"), traffic.NDJSON},
		{"NDJSON with a malformed frame first", write(t, "bad.ndjson", "{\"jsonrpc\":\n"+initReq+"\n"), traffic.NDJSON},
		{"store", dbPath, traffic.Store},
		// A line that is no frame after the first is the stream's problem,
		// reported where it is, not a reason to refuse the file.
		{"NDJSON with text later", write(t, "later.ndjson", initReq+"\nnot json\n"), traffic.NDJSON},
		{"a frame longer than the sniffer's buffer", write(t, "long.ndjson", `{"jsonrpc":"2.0","method":"x","params":"`+strings.Repeat("a", 100<<10)+"\"}\n"), traffic.NDJSON},
	} {
		got, err := traffic.Sniff(c.path)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct{ name, path, why string }{
		{"binary", write(t, "a.out", "\x7fELF\x00\x01\x02"), "not text"},
		{"log", write(t, "log.txt", "starting agent\nready\n"), "line 1 is not a JSON object"},
		{"object", write(t, "o.json", `{"name":"x"}`+"\n"), "no trace record, recording line or protocol frame"},
		{"a cut line, then text", write(t, "later.jsonl", "{\"jsonrpc\":\nnot json\n"), "line 2 is not a JSON object"},
		{"directory", dir, "is a directory"},
	} {
		_, err := traffic.Sniff(c.path)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v; want an error naming the file and %q", c.name, err, c.why)
		}
		if c.name != "directory" && !errors.Is(err, traffic.ErrFormat) {
			t.Errorf("%s: %v is not ErrFormat", c.name, err)
		}
	}
	if _, err := traffic.Sniff(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func convert(t *testing.T, format traffic.Format, path string) []*tracelog.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := traffic.NewConverter(format, path, "")
	var out []*tracelog.Record
	for line := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		recs, err := c.Line([]byte(line))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, recs...)
	}
	return append(out, c.End()...)
}

// A trace edited by hand is judged afresh: what its records say of their
// frames (kind, pairing, problems, notes) is recomputed from the lines.
func TestConverterRechecksATrace(t *testing.T) {
	data := traceOf(initReq, initResp, noID, typo)
	// The hand edit: the records claim the broken frames are fine and the
	// reply answers nothing.
	data = strings.ReplaceAll(data, `"type":"frame"`, `"type":"frame","problems":[],"reply_to":7,"kind":"request"`)
	recs := convert(t, traffic.Trace, write(t, "edited.jsonl", data))
	if len(recs) != 5 {
		t.Fatalf("%d records", len(recs))
	}
	req, resp, missing, typoRec := recs[1], recs[2], recs[3], recs[4]
	if req.Kind != frames.Request || req.Method != "initialize" || resp.ReplyTo != req.Seq || resp.LatencyUS == nil {
		t.Errorf("request %+v, reply %+v: not paired afresh", req, resp)
	}
	if missing.Kind != frames.Notification || len(missing.Problems) == 0 || missing.Problems[0].Pointer != "/params/sessionId" {
		t.Errorf("a frame without its sessionId: kind %q, problems %+v", missing.Kind, missing.Problems)
	}
	if len(typoRec.Notes) == 0 || !strings.Contains(typoRec.Notes[0].Message, "agent_message_chunk") {
		t.Errorf("agent_mesage_chunk: notes %+v", typoRec.Notes)
	}
}

// A recording and a tee log become one session named after the file, with
// directions (told from the recording, or from the catalogue), pairing,
// and an end that lists what was never answered.
func TestConverterReadsRecordingsAndNDJSON(t *testing.T) {
	rec := `{"seq":1,"ms":1,"dir":"send","line":` + quote(initReq) + "}\n" +
		`{"seq":2,"ms":3.5,"dir":"recv","line":` + quote(initResp) + "}\n" +
		`{"seq":3,"ms":4,"dir":"send","line":` + quote(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`) + "}\n"
	tee := initReq + "\n" + initResp + "\n" + `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}` + "\n"
	for _, c := range []struct {
		format traffic.Format
		name   string
		data   string
	}{{traffic.Recording, "codex.jsonl", rec}, {traffic.NDJSON, "tee.log", tee}} {
		recs := convert(t, c.format, write(t, c.name, c.data))
		if len(recs) != 5 || recs[0].Type != tracelog.TypeSession || recs[4].Type != tracelog.TypeEnd {
			t.Fatalf("%s: %d records", c.name, len(recs))
		}
		want := strings.TrimSuffix(c.name, filepath.Ext(c.name))
		for _, r := range recs {
			if r.Session != want {
				t.Errorf("%s: session %q, want %q", c.name, r.Session, want)
			}
		}
		if recs[1].Dir != frames.In || recs[2].Dir != frames.Out || recs[2].ReplyTo != 1 || recs[3].Dir != frames.In {
			t.Errorf("%s: directions %s %s %s, reply to %d", c.name, recs[1].Dir, recs[2].Dir, recs[3].Dir, recs[2].ReplyTo)
		}
		if end := recs[4]; len(end.Unanswered) != 1 || end.Unanswered[0].Method != "session/new" {
			t.Errorf("%s: unanswered %+v", c.name, end.Unanswered)
		}
	}
	// A recording's times come from its ms.
	recs := convert(t, traffic.Recording, write(t, "r.jsonl", rec))
	if d := recs[2].Time.Sub(recs[1].Time); d != 2500*time.Microsecond {
		t.Errorf("recorded reply %v after its request, want 2.5ms", d)
	}
}

// A line that is not of the file's form is an error naming its line; the
// lines after it are still read.
func TestConverterNamesBadLines(t *testing.T) {
	c := traffic.NewConverter(traffic.Recording, "r.jsonl", "")
	if _, err := c.Line([]byte(`{"seq":1,"dir":"sideways","line":"{}"}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad recording line: %v", err)
	}
	if recs, err := c.Line([]byte(`{"seq":2,"dir":"send","line":` + quote(initReq) + `}`)); err != nil || len(recs) != 2 {
		t.Errorf("the next line: %d records, %v", len(recs), err)
	}
	c = traffic.NewConverter(traffic.Trace, "t.jsonl", "")
	if _, err := c.Line([]byte(`{"type":"frame","session":"s","seq":1,"time":"2026-12-06T10:00:00Z","dir":"up","raw":"{}"}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a frame with no direction: %v", err)
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
