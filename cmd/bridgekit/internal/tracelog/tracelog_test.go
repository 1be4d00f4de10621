package tracelog

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
)

func TestRoundTrip(t *testing.T) {
	var buf []byte
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	recs := []*Record{
		{Type: TypeSession, Session: "s1", Time: t0, Version: Version, Command: []string{"host", "-x"}},
		{Type: TypeFrame, Session: "s1", Seq: 1, Time: t0, Dir: frames.In, Size: 5},
		{Type: TypeFrame, Session: "s1", Seq: 2, Time: t0, Dir: frames.Out, Size: 2},
		{Type: TypeFrame, Session: "s1", Seq: 3, Time: t0, Dir: frames.Out, Size: 0},
	}
	recs[1].SetLine([]byte(`{"a":1}`))
	recs[2].SetLine([]byte{0xff, 0xfe})
	recs[3].SetLine(nil)
	for _, r := range recs {
		var err error
		if buf, err = r.Marshal(buf); err != nil {
			t.Fatal(err)
		}
	}
	buf = append(buf, "\n{\"type\":\"future\",\"session\":\"s1\"}\n"...)
	got, err := ReadAll(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d records", len(got))
	}
	if string(got[1].Line()) != `{"a":1}` || !bytes.Equal(got[2].Line(), []byte{0xff, 0xfe}) || got[3].Raw == nil || len(got[3].Line()) != 0 {
		t.Fatalf("lines %q %q %v", got[1].Line(), got[2].Line(), got[3].Raw)
	}
	if !got[0].Time.Equal(t0) || got[0].Command[1] != "-x" {
		t.Fatalf("%+v", got[0])
	}
}

func TestReaderErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":   "nope\n",
		"no session": `{"type":"frame","seq":1,"raw":"x"}` + "\n",
		"no raw":     `{"type":"frame","session":"s","seq":1}` + "\n",
		"bad base64": `{"type":"frame","session":"s","seq":1,"raw_base64":"!!"}` + "\n",
		"wrong kind": `{"type":"frame","session":"s","seq":"one","raw":"x"}` + "\n",
	} {
		_, err := ReadAll(strings.NewReader(in))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != 1 {
			t.Errorf("%s: %v", name, err)
		}
	}
	rd := NewReader(strings.NewReader(strings.Repeat("x", 300)+"\n"+`{"type":"end","session":"s","seq":2}`+"\n"), 100)
	if _, err := rd.Next(); !errors.Is(err, ErrTooLong) {
		t.Fatalf("long line: %v", err)
	}
	if rec, err := rd.Next(); err != nil || rec.Type != TypeEnd || rd.Line() != 2 {
		t.Fatalf("after a long line: %v %v", rec, err)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatal(err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"type":"session","session":"s","seq":0,"time":"2026-12-01T10:00:00Z","v":1,"command":["x"]}` + "\n" +
		`{"type":"frame","session":"s","seq":1,"time":"2026-12-01T10:00:00Z","dir":"in","size":2,"raw":"{}","kind":"invalid","problems":[{"code":"malformed","message":"m"}]}` + "\n"))
	f.Add([]byte(`{"type":"frame","session":"s","raw_base64":"//4="}`))
	f.Add([]byte("\n\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := NewReader(bytes.NewReader(data), 1024)
		for range 1000 {
			rec, err := rd.Next()
			if err == io.EOF {
				return
			}
			var se *SyntaxError
			if err != nil && !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			if rec != nil {
				if _, err := rec.Marshal(nil); err != nil {
					t.Fatalf("re-encode: %v", err)
				}
				_ = rec.Line()
			}
		}
	})
}
