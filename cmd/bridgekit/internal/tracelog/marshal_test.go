package tracelog

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

func ptr[T any](v T) *T { return &v }

// marshalRecords are records Marshal must encode as encoding/json does:
// every member set and unset, strings that need escaping, odd floats,
// ids, times and records appendJSON leaves to encoding/json.
func marshalRecords() []*Record {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	odd := "quote\" back\\ ctl\x01\x1f\b\f\n\r\t html<>& del\x7f é \u2028\u2029 bad\xff\xc3 end"
	recs := []*Record{
		{Type: TypeSession, Session: "s1", Time: t0, Version: Version, Command: []string{"host", "-x", odd}},
		{Type: TypeFrame, Session: "s1", Seq: 1, Time: t0, Dir: frames.In, Size: 5, Raw: ptr(`{"a":"<b>&\u2028"}`),
			Family: frames.ACP, Kind: frames.Request, Method: "session/prompt", ID: json.RawMessage(`1`)},
		{Type: TypeFrame, Session: "s1", Seq: 2, Time: t0, Dir: frames.Out, Size: 2, RawBase64: "//4=", Redacted: true,
			Truncated: true, Partial: true, Kind: frames.Response, Method: "m", Qualifier: "knowledge",
			ID: json.RawMessage(`"abc-1"`), ReplyTo: 1, LatencyUS: ptr(12.5),
			Problems: []frames.Problem{{Code: "schema", Pointer: "/params/x", Message: odd}, {Code: "malformed", Message: "m"}}},
		{Type: TypeEnd, Session: "s1", Seq: 3, Time: t0, Status: ptr(0), Signal: "SIGTERM", Family: frames.Harn,
			Unanswered: []frames.Pending{{Seq: 1, Dir: frames.In, Method: "x", ID: `"a<b"`, At: t0}}},
		{Type: TypeFrame, Session: "", Seq: -1, Time: time.Time{}, Raw: ptr("")},
		{Type: TypeFrame, Session: "s", Time: t0.In(time.FixedZone("X", 3600))},
		{Type: TypeFrame, Session: "s", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Type: TypeFrame, Session: "s", Time: t0, ID: json.RawMessage(` 1 `)},
		{Type: TypeFrame, Session: "s", Time: t0, ID: json.RawMessage(`"a&b"`)},
		{Type: TypeFrame, Session: "s", Time: t0, ID: json.RawMessage(`1.5e3`)},
		{Type: TypeFrame, Session: "s", Time: t0, ID: json.RawMessage(`-0`)},
		{Type: TypeFrame, Session: "s", Time: t0, ID: json.RawMessage(`012`)},
		{Type: TypeFrame, Session: "s", Time: t0, ID: json.RawMessage(`null`)},
		{Type: TypeFrame, Session: "s", Time: t0, Status: ptr(-9), Problems: []frames.Problem{}},
		{Type: TypeEnd, Session: "s", Time: t0, Unanswered: []frames.Pending{{At: t0.AddDate(9000, 0, 0)}}},
	}
	for _, f := range []float64{0, -0.0, 1e-7, 1e-6, 123456789, 1e20, 1e21, 1.5e-300, math.MaxFloat64, 0.000123, math.Inf(1), math.NaN()} {
		recs = append(recs, &Record{Type: TypeFrame, Session: "s", Time: t0, LatencyUS: ptr(f), ReplyTo: 3})
	}
	return recs
}

func TestMarshalMatchesEncodingJSON(t *testing.T) {
	for _, r := range marshalRecords() {
		checkMarshal(t, r)
	}
}

func checkMarshal(t *testing.T, r *Record) {
	t.Helper()
	prefix := []byte("prefix\n")
	got, err := r.Marshal(bytes.Clone(prefix))
	want, werr := r.marshalStd(bytes.Clone(prefix))
	if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("Marshal(%+v)\n got %s (%v)\nwant %s (%v)", r, got, err, want, werr)
	}
}

func FuzzMarshal(f *testing.F) {
	f.Add("s1", "{\"a\":\"<\u2028\xff\"}", "session/prompt", `17`, int64(3), 12.5, int64(1764583200123456789), "m\n")
	f.Add("", "", "", `"x"`, int64(0), 1e-9, int64(0), "")
	f.Fuzz(func(t *testing.T, session, raw, method, id string, seq int64, latency float64, nanos int64, msg string) {
		at := time.Unix(0, nanos).UTC()
		r := &Record{Type: TypeFrame, Session: "s" + session, Seq: seq, Time: at, Dir: frames.Out, Size: len(raw),
			Method: method, Qualifier: msg, ReplyTo: seq, LatencyUS: &latency, Signal: msg,
			Problems:   []frames.Problem{{Code: msg, Pointer: method, Message: raw}},
			Unanswered: []frames.Pending{{Seq: seq, Method: method, ID: id, At: at}}, Command: []string{raw, msg}}
		r.SetLine([]byte(raw))
		if json.Valid([]byte(id)) {
			r.ID = json.RawMessage(id)
		}
		checkMarshal(t, r)
		// And it reads back.
		b, err := r.Marshal(nil)
		if err != nil {
			return
		}
		got, err := ReadAll(bytes.NewReader(b))
		if err != nil || len(got) != 1 || !bytes.Equal(got[0].Line(), r.Line()) {
			t.Fatalf("read back %s: %v %v", b, got, err)
		}
	})
}
