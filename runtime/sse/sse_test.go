package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bridgekit/bridgekit/runtime/frame"
)

type got struct {
	id   string
	data string
	err  string
}

func readAll(t *testing.T, r io.Reader, max int) []got {
	t.Helper()
	d := NewDecoder(r, max)
	var out []got
	for i := 0; i < 1000; i++ {
		ev, err := d.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			var tl *frame.TooLargeError
			if !errors.As(err, &tl) {
				out = append(out, got{err: err.Error()})
				return out
			}
			out = append(out, got{err: "too large " + string(tl.Head)})
			continue
		}
		out = append(out, got{id: ev.ID, data: string(ev.Data)})
	}
	t.Fatal("no end")
	return nil
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []got
	}{
		{"lf", "data: {}\n\n", []got{{data: "{}"}}},
		{"crlf", "data: {}\r\n\r\n", []got{{data: "{}"}}},
		{"bare cr", "data: a\rdata: b\r\rdata: c\r\r", []got{{data: "a\nb"}, {data: "c"}}},
		{"no space", "data:{}\n\n", []got{{data: "{}"}}},
		{"two spaces keep one", "data:  x\n\n", []got{{data: " x"}}},
		{"bom per line", "\xEF\xBB\xBFdata: 1\n\xEF\xBB\xBF\n", []got{{data: "1"}}},
		{"comments and fields ignored", ":\n\n: keep\nevent: message\nretry: 10\ndata: x\n\n", []got{{data: "x"}}},
		{"ids", "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []got{{id: "7", data: "a"}, {id: "7", data: "b"}, {id: "", data: "c"}}},
		{"id with nul ignored", "id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\n", []got{{id: "1", data: "a"}, {id: "1", data: "b"}}},
		{"dispatch at eof", "data: last", []got{{data: "last"}}},
		{"dispatch at eof after cr", "data: last\r", []got{{data: "last"}}},
		{"no data no event", "id: 3\n\nevent: x\n\n", nil},
		{"field without colon", "data\n\n", []got{{data: ""}}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				g := readAll(t, r, 0)
				if len(g) != len(tc.want) {
					t.Fatalf("got %q, want %q", g, tc.want)
				}
				for i := range g {
					if g[i] != tc.want[i] {
						t.Fatalf("event %d: got %q, want %q", i, g[i], tc.want[i])
					}
				}
			}
		})
	}
}

// An event over the limit is reported with its head and the stream goes on, whether the data is in one
// long line or in many short ones.
func TestTooLarge(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, in := range []string{
		"data: " + long + "\n\ndata: ok\n\n",
		"data: " + long[:40] + "\ndata: " + long[:40] + "\ndata: " + long[:40] + "\n\ndata: ok\n\n",
		"data: " + strings.Repeat("y", 5000) + "\r\n\r\ndata: ok\r\n\r\n",
	} {
		for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in)), iotest.HalfReader(strings.NewReader(in))} {
			g := readAll(t, r, 64)
			if len(g) != 2 || !strings.HasPrefix(g[0].err, "too large ") || g[1] != (got{data: "ok"}) {
				t.Fatalf("%.30q: got %q", in, g)
			}
		}
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	d := NewDecoder(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)), 0)
	if ev, err := d.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("got %q %v", ev.Data, err)
	}
	// An error other than io.EOF ends the stream, and the event it cut is not dispatched.
	if _, err := d.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
}

func TestAppendEvent(t *testing.T) {
	for _, tc := range []struct{ id, data, want string }{
		{"", `{"a":1}`, "data: {\"a\":1}\n\n"},
		{"12", `{}`, "id: 12\ndata: {}\n\n"},
		{"", "a\nb\r\nc\rd", "data: a\ndata: b\ndata: c\ndata: d\n\n"},
	} {
		if g := string(AppendEvent(nil, tc.id, []byte(tc.data))); g != tc.want {
			t.Errorf("AppendEvent(%q, %q) = %q, want %q", tc.id, tc.data, g, tc.want)
		}
	}
}

// FuzzDecode: any input decodes without panic, within the limit; events written by AppendEvent read back
// as written (line breaks as "\n").
func FuzzDecode(f *testing.F) {
	f.Add([]byte("data: {}\n\n"), []byte("x\ny"), "3")
	f.Add([]byte("\xEF\xBB\xBFdata:a\r\r\n:\n"), []byte(""), "")
	f.Add([]byte("data: "+strings.Repeat("z", 80)+"\ndata: q"), []byte("\r\r\n"), "9")
	f.Fuzz(func(t *testing.T, in, data []byte, id string) {
		d := NewDecoder(bytes.NewReader(in), 64)
		for i := 0; ; i++ {
			ev, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil && !errors.Is(err, frame.ErrTooLarge) {
				t.Fatal(err)
			}
			if len(ev.Data) > 64 {
				t.Fatalf("event of %d bytes over the limit", len(ev.Data))
			}
			if i > len(in) {
				t.Fatal("more events than bytes")
			}
		}
		if strings.ContainsAny(id, "\r\n\x00") {
			return
		}
		enc := AppendEvent(nil, id, data)
		d = NewDecoder(iotest.HalfReader(bytes.NewReader(enc)), len(data)+len(id)+1)
		ev, err := d.Next()
		if err != nil {
			t.Fatalf("%.200q: %v", enc, err)
		}
		want := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(data))
		if string(ev.Data) != want || ev.ID != id || ev.HasID != (id != "") {
			t.Fatalf("%.200q read back as %.200q id %.200q", enc, ev.Data, ev.ID)
		}
		if _, err := d.Next(); err != io.EOF {
			t.Fatalf("after the event: %v", err)
		}
	})
}
