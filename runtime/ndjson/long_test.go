package ndjson

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLongLinesAnyChunking reads a mix of short and long lines, the long
// ones read straight into the spill buffer, through readers that return
// data in different chunk sizes, and with data and EOF or an error together.
func TestLongLinesAnyChunking(t *testing.T) {
	var stream bytes.Buffer
	var want []string
	for i, n := range []int{10, 5000, 3, 70000, 1, 4095, 4096, 4097, 200000, 2, 9000, 17} {
		line := strings.Repeat(string(rune('a'+i)), n)
		want = append(want, line)
		stream.WriteString(line)
		if i%3 == 0 {
			stream.WriteByte('\r')
		}
		stream.WriteByte('\n')
	}
	want = append(want, strings.Repeat("z", 50000)) // unterminated final line
	stream.WriteString(want[len(want)-1])
	boom := errors.New("boom")
	for name, mk := range map[string]func() io.Reader{
		"whole":       func() io.Reader { return bytes.NewReader(stream.Bytes()) },
		"one byte":    func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream.Bytes())) },
		"half":        func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream.Bytes())) },
		"data+EOF":    func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream.Bytes())) },
		"data+error":  func() io.Reader { return iotest.TimeoutReader(iotest.DataErrReader(bytes.NewReader(stream.Bytes()))) },
		"then errors": func() io.Reader { return io.MultiReader(bytes.NewReader(stream.Bytes()), iotest.ErrReader(boom)) },
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(mk(), 300000)
			var got []string
			for {
				f, err := r.ReadFrame()
				if err != nil {
					if name == "then errors" && !errors.Is(err, boom) {
						t.Fatalf("err = %v, want boom", err)
					}
					break
				}
				got = append(got, string(f))
			}
			n := len(want)
			if name == "then errors" || name == "data+error" {
				n-- // the unterminated line is dropped on a read error
			}
			if name == "data+error" {
				// TimeoutReader fails the second Read; compare what came before.
				n = min(n, len(got))
			}
			if len(got) != n {
				t.Fatalf("%d frames, want %d", len(got), n)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("frame %d: %d bytes, want %d", i, len(got[i]), len(want[i]))
				}
			}
		})
	}
}
