package recorder

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// Bytes pass unchanged in both directions, whatever the write and read
// sizes, and every line is recorded once, in order, with its direction,
// method and id; a last line without a newline is recorded at the end.
func TestForwardsUnchangedAndRecordsLines(t *testing.T) {
	r := New()
	var toChild bytes.Buffer
	w := r.Writer(Send, &toChild)
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\r\n{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\"}\n"
	for i := 0; i < len(in); i += 7 { // small writes split lines anywhere
		if _, err := w.Write([]byte(in[i:min(i+7, len(in))])); err != nil {
			t.Fatal(err)
		}
	}
	if toChild.String() != in {
		t.Fatalf("forwarded %q", toChild.String())
	}
	out := "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nnot json\n{\"partial\":"
	got, err := io.ReadAll(iotest.OneByteReader(r.Reader(Recv, strings.NewReader(out))))
	if err != nil || string(got) != out {
		t.Fatalf("read %q, %v", got, err)
	}
	fs := r.Frames()
	want := []struct{ dir, method, id, line string }{
		{Send, "initialize", "1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{Send, "session/cancel", "", `{"jsonrpc":"2.0","method":"session/cancel"}`},
		{Recv, "", "1", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{Recv, "", "", "not json"},
		{Recv, "", "", `{"partial":`},
	}
	if len(fs) != len(want) {
		t.Fatalf("%d frames: %+v", len(fs), fs)
	}
	for i, w := range want {
		f := fs[i]
		if f.Seq != i+1 || f.Dir != w.dir || f.Method != w.method || string(f.ID) != w.id || f.Line != w.line || f.Cut {
			t.Errorf("frame %d: %+v, want %+v", i, f, w)
		}
	}
	// Written and read back: the same frames.
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := WriteFile(path, fs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil || len(back) != len(fs) {
		t.Fatalf("read back %d frames, %v", len(back), err)
	}
	for i := range fs {
		if back[i].Line != fs[i].Line || back[i].Dir != fs[i].Dir || string(back[i].ID) != string(fs[i].ID) {
			t.Errorf("frame %d read back as %+v", i, back[i])
		}
	}
}

// A line over MaxLine is forwarded whole and recorded cut to MaxLine.
func TestLongLineIsForwardedWholeAndRecordedCut(t *testing.T) {
	r := New()
	var sink bytes.Buffer
	w := r.Writer(Send, &sink)
	long := bytes.Repeat([]byte("x"), MaxLine+10)
	w.Write(long)
	w.Write([]byte("\n{}\n"))
	if sink.Len() != len(long)+4 {
		t.Fatalf("forwarded %d bytes", sink.Len())
	}
	fs := r.Frames()
	if len(fs) != 2 || !fs[0].Cut || len(fs[0].Line) != MaxLine || fs[1].Line != "{}" || fs[1].Cut {
		t.Fatalf("frames: %d, cut %v, len %d", len(fs), fs[0].Cut, len(fs[0].Line))
	}
}

// Only what the writer accepted is recorded.
func TestRecordsOnlyWhatWasWritten(t *testing.T) {
	r := New()
	w := r.Writer(Send, &limited{n: 5})
	n, err := w.Write([]byte("{}\n{}\n"))
	if n != 5 || err == nil {
		t.Fatalf("wrote %d, %v", n, err)
	}
	if fs := r.Frames(); len(fs) != 1 || fs[0].Line != "{}" {
		t.Fatalf("frames %+v", fs)
	}
}

type limited struct{ n int }

func (l *limited) Write(b []byte) (int, error) {
	if len(b) > l.n {
		n := l.n
		l.n = 0
		return n, io.ErrShortWrite
	}
	l.n -= len(b)
	return len(b), nil
}

func TestReadRejectsBadFiles(t *testing.T) {
	for _, in := range []string{"", "{}\n", `{"seq":1,"dir":"up","line":"x"}`, "not json\n"} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("Read(%q) succeeded", in)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"seq":1,"ms":0,"dir":"send","method":"initialize","id":1,"line":"{}"}` + "\n"))
	f.Add([]byte(`{"seq":1,"dir":"recv","line":"x","cut":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, fs); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&b)
		if err != nil || len(again) != len(fs) {
			t.Fatalf("frames written do not read back: %v", err)
		}
	})
}

// Whatever is written, in whatever pieces, is forwarded unchanged and the
// recorded lines are exactly its lines.
func FuzzSplitter(f *testing.F) {
	f.Add([]byte("{}\n{\"a\":1}\r\nx"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		r := New()
		var sink bytes.Buffer
		w := r.Writer(Send, &sink)
		n := int(step%16) + 1
		for i := 0; i < len(data); i += n {
			w.Write(data[i:min(i+n, len(data))])
		}
		w.Close()
		if !bytes.Equal(sink.Bytes(), data) {
			t.Fatal("forwarded bytes differ")
		}
		var lines []string
		for _, f := range r.Frames() {
			lines = append(lines, f.Line)
		}
		// A line ended by "\n" is recorded without it and without a "\r"
		// before it; a last line without "\n" is recorded as it is.
		want := strings.Split(string(data), "\n")
		for i := range want[:len(want)-1] {
			want[i] = strings.TrimSuffix(want[i], "\r")
		}
		if want[len(want)-1] == "" {
			want = want[:len(want)-1]
		}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") || len(lines) != len(want) {
			t.Fatalf("lines %q, want %q", lines, want)
		}
	})
}
