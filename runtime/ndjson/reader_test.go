package ndjson

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads frames until an error and returns them with that error.
// FrameTooLargeErrors are recorded as "<too large>" and reading continues.
func readAll(t *testing.T, r *Reader) ([]string, error) {
	t.Helper()
	var frames []string
	for {
		f, err := r.ReadFrame()
		var tooLarge *FrameTooLargeError
		switch {
		case errors.As(err, &tooLarge):
			frames = append(frames, "<too large>")
		case err != nil:
			return frames, err
		default:
			frames = append(frames, string(f))
		}
	}
}

func TestReadFrame(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	tests := []struct {
		name  string
		in    string
		max   int
		want  []string
		reads int // if > 0, deliver the input this many bytes at a time
	}{
		{name: "empty", in: "", want: nil},
		{name: "lines", in: "{}\n[1]\n\"s\"\n", want: []string{"{}", "[1]", `"s"`}},
		{name: "crlf", in: "{}\r\n[1]\r\n", want: []string{"{}", "[1]"}},
		{name: "blank lines skipped", in: "\n\n  \t\n\r\n{}\n \r\n[]\n\n", want: []string{"{}", "[]"}},
		{name: "inner spaces kept", in: " {} \n", want: []string{" {} "}},
		{name: "final line without newline", in: "{}\n[1]", want: []string{"{}", "[1]"}},
		{name: "final blank line without newline", in: "{}\n  ", want: []string{"{}"}},
		{name: "long lines spill", in: long + "\n{}\n" + long, want: []string{long, "{}", long}},
		{name: "byte at a time", in: "{}\n" + long + "\r\n[]", want: []string{"{}", long, "[]"}, reads: 1},
		{name: "exactly the limit", in: "12345\n", max: 5, want: []string{"12345"}},
		{name: "exactly the limit with crlf", in: "12345\r\n", max: 5, want: []string{"12345"}},
		{name: "limit plus one", in: "123456\nok\n", max: 5, want: []string{"<too large>", "ok"}},
		{name: "too large then more", in: "1\n" + long + "\n2\n" + long + "\n3", max: 100,
			want: []string{"1", "<too large>", "2", "<too large>", "3"}},
		{name: "too large at eof", in: "1\n" + long, max: 100, want: []string{"1", "<too large>"}},
		{name: "spilled line over the limit", in: long + "\nok\n", max: 9_999, want: []string{"<too large>", "ok"}},
		{name: "spilled line at the limit", in: long + "\r\nok\n", max: 10_000, want: []string{long, "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src io.Reader = strings.NewReader(tt.in)
			if tt.reads > 0 {
				src = iotest.OneByteReader(src)
			}
			got, err := readAll(t, NewReader(src, tt.max))
			if err != io.EOF {
				t.Fatalf("final error = %v, want io.EOF", err)
			}
			if !equal(got, tt.want) {
				t.Fatalf("frames = %q, want %q", got, tt.want)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadFrameDefaultLimit(t *testing.T) {
	for _, max := range []int{0, -1} {
		if r := NewReader(strings.NewReader(""), max); r.max != DefaultMaxFrame {
			t.Errorf("NewReader(_, %d) limit = %d, want %d", max, r.max, DefaultMaxFrame)
		}
	}
}

func TestFrameTooLargeError(t *testing.T) {
	r := NewReader(strings.NewReader(strings.Repeat("a", 50)+"\n"), 10)
	_, err := r.ReadFrame()
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want Is(ErrFrameTooLarge)", err)
	}
	var tooLarge *FrameTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 10 {
		t.Fatalf("err = %#v, want *FrameTooLargeError{Limit: 10}", err)
	}
	if !strings.Contains(err.Error(), "10") {
		t.Errorf("Error() = %q, does not mention the limit", err)
	}
}

func TestOversizedLineIsNotBuffered(t *testing.T) {
	const limit = 1 << 10
	huge := bytes.Repeat([]byte("x"), 8<<20)
	r := NewReader(io.MultiReader(bytes.NewReader(huge), strings.NewReader("\nok\n")), limit)
	if _, err := r.ReadFrame(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
	if c := cap(r.buf); c > max(burstBuffer, 2*(limit+minBuffer)) {
		t.Errorf("buffer grew to %d bytes for a %d-byte limit", c, limit)
	}
	if f, err := r.ReadFrame(); err != nil || string(f) != "ok" {
		t.Fatalf("next frame = %q, %v; want \"ok\"", f, err)
	}
}

func TestLargeSpillIsReleased(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	r := NewReader(strings.NewReader(big+"\n{}\n"), 0)
	if f, err := r.ReadFrame(); err != nil || len(f) != len(big) {
		t.Fatalf("ReadFrame = %d bytes, %v", len(f), err)
	}
	if _, err := r.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if cap(r.buf) > burstBuffer {
		t.Errorf("buffer of %d bytes retained after a long line", cap(r.buf))
	}
}

func TestReadErrorsReturnedAsIs(t *testing.T) {
	boom := errors.New("boom")
	src := io.MultiReader(strings.NewReader("{}\n{\"partial"), iotest.ErrReader(boom))
	got, err := readAll(t, NewReader(src, 0))
	if err != boom {
		t.Fatalf("err = %v, want boom", err)
	}
	if !equal(got, []string{"{}"}) {
		t.Fatalf("frames = %q, want only the complete line", got)
	}
}

// loopReader yields its content over and over.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func TestReadFrameDoesNotAllocate(t *testing.T) {
	for _, size := range []int{100, 20_000} {
		line := append(bytes.Repeat([]byte("x"), size), '\n')
		r := NewReader(&loopReader{data: line}, 0)
		allocs := testing.AllocsPerRun(1000, func() {
			if f, err := r.ReadFrame(); err != nil || len(f) != size {
				t.Fatalf("ReadFrame = %d bytes, %v", len(f), err)
			}
		})
		if allocs != 0 {
			t.Errorf("%d-byte frames: %v allocations per frame, want 0", size, allocs)
		}
	}
}

func BenchmarkReadFrame(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"sessionId":"s","n":1}}` + "\n")
	r := NewReader(&loopReader{data: line}, 0)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

// An over-long line is reported with its first HeadSize bytes, however it
// was read: buffered whole, dropped as it came, or cut by the end of input.
func TestFrameTooLargeErrorKeepsTheHead(t *testing.T) {
	line := `{"id":"c-7","result":"` + strings.Repeat("x", 10_000) + `"}`
	short := `{"id":1,"params":"` + strings.Repeat("y", 40) + `"}`
	for _, tc := range []struct {
		name, input string
		max         int
		want        string
	}{
		{"buffered whole", short + "\n", 20, short},
		{"dropped as it came", line + "\n", 100, line[:HeadSize]},
		{"dropped, then end of input", line, 100, line[:HeadSize]},
		{"buffered whole, then end of input", short, 20, short},
		{"dropped in one-byte reads", line + "\r\n", 100, line[:HeadSize]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var src io.Reader = strings.NewReader(tc.input + `{"next":1}` + "\n")
			if strings.Contains(tc.name, "end of input") {
				src = strings.NewReader(tc.input)
			}
			if strings.Contains(tc.name, "one-byte") {
				src = iotest.OneByteReader(src)
			}
			r := NewReader(src, tc.max)
			_, err := r.ReadFrame()
			var tooLarge *FrameTooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("err = %v, want a *FrameTooLargeError", err)
			}
			if string(tooLarge.Head) != tc.want {
				t.Fatalf("Head = %q (%d bytes), want %d bytes %q…", tooLarge.Head, len(tooLarge.Head), len(tc.want), tc.want[:min(len(tc.want), 40)])
			}
			next, err := r.ReadFrame()
			if strings.Contains(tc.name, "end of input") {
				if err != io.EOF {
					t.Fatalf("after the line: %q, %v; want io.EOF", next, err)
				}
				return
			}
			if err != nil || string(next) != `{"next":1}` {
				t.Fatalf("after the line: %q, %v", next, err)
			}
		})
	}
}
