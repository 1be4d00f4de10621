package ndjson

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkReader delivers data in reads whose sizes are taken from sizes, in
// turn: a size byte s gives 1+s&0x7f bytes, times 64 if its top bit is set.
// With no sizes, everything arrives in one read. If eofWithData is set the
// last read returns its bytes together with io.EOF.
type chunkReader struct {
	data        []byte
	sizes       []byte
	next        int
	eofWithData bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		s := r.sizes[r.next%len(r.sizes)]
		r.next++
		n = 1 + int(s&0x7f)
		if s&0x80 != 0 {
			n *= 64
		}
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	if len(r.data) == 0 && r.eofWithData {
		return n, io.EOF
	}
	return n, nil
}

const tooLargeMark = "<too large>"

// modelFrames is what a Reader with the given limit must return for data:
// the lines of data (the last one may lack its '\n'), each without one
// trailing '\r', with lines holding only spaces, tabs and '\r' left out and
// lines longer than max replaced by tooLargeMark followed by their first
// HeadSize bytes (FrameTooLargeError.Head).
func modelFrames(data []byte, max int) []string {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // data is empty or ends with '\n'
	}
	var frames []string
	for _, l := range lines {
		l = bytes.TrimSuffix(l, []byte("\r"))
		switch {
		case len(l) > max:
			frames = append(frames, tooLargeMark+string(l[:min(len(l), HeadSize)]))
		case len(bytes.Trim(l, " \t\r")) == 0:
		default:
			frames = append(frames, string(l))
		}
	}
	return frames
}

// fuzzMaxFrame maps the fuzzed limit to 1..6000, so that both the fast path
// (lines within the 4 KiB read buffer) and the spill path are reached.
func fuzzMaxFrame(m uint16) int { return 1 + int(m)%6000 }

// FuzzReader feeds arbitrary streams, split into reads of fuzzed sizes, to a
// Reader with a small limit. The frames and oversized-line errors it returns
// must account for every line of the input (see modelFrames), no frame may
// hold a '\n' or exceed the limit, and the Reader must reach io.EOF after
// at most one call per line.
//
// Long lines come from pad, a number of copies of the first byte put in
// front of data, rather than from long inputs: the fuzzer minimises every
// new input byte by byte, which takes minutes for inputs of several KiB.
func FuzzReader(f *testing.F) {
	seeds := []struct {
		data  string
		pad   uint16
		max   uint16
		sizes string
		eof   bool
	}{
		{"", 0, 100, "", false},
		{"\n", 0, 100, "", false},
		{"{}\n[1]\n\"s\"\n", 0, 100, "", false},
		{"{}\r\n[1]\r\n", 0, 100, "\x00", true},
		{"\n\n  \t\n\r\n{}\n \r\n[]\n\n", 0, 100, "\x01\x02", false},
		{" {} \n{}\n[1]", 0, 100, "\x03", true},
		{"{}\n  ", 0, 100, "", false},
		{"12345\n", 0, 4, "", false},                 // limit 5
		{"12345\r\n123456\r\n", 0, 4, "\x00", false}, // limit 5: one fits, one does not
		{"123456\nok\n", 0, 4, "\x05", false},
		{"\r\r\r\n\r\n\r", 0, 1, "", false},
		{"a\rb\n\rc\n", 0, 10, "", false},
		{"y\n2\n3", 4500, 100, "\x81\x7f", false},                          // too large line first
		{"y\r\nok\n", 4499, 4499, "\xff\x00", true},                        // limit 4500, spill path, fits
		{"yx\nok\n", 4499, 4499, "\xff\x00", true},                         // limit 4500, spill path, one too many
		{"yy\nok\n", 9000, 5999, "\x90", false},                            // limit 6000, spilled line too large
		{" \n{}\n", 5000, 5999, "\x85", false},                             // blank spilled line
		{" \n{}\n", 200, 99, "", false},                                    // blank but too large
		{"\x00\xff\xfe binary \x1b\n\x00\n", 0, 50, "\x00\x01", true},      // not JSON: still frames
		{`{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n", 0, 30, "", false}, // too large at limit 31
	}
	for _, s := range seeds {
		f.Add([]byte(s.data), s.pad, s.max, []byte(s.sizes), s.eof)
	}
	f.Fuzz(func(t *testing.T, data []byte, pad, maxFrame uint16, sizes []byte, eofWithData bool) {
		if len(data) > 0 && pad > 0 {
			data = append(bytes.Repeat(data[:1], int(pad)), data...)
		}
		max := fuzzMaxFrame(maxFrame)
		r := NewReader(&chunkReader{data: data, sizes: sizes, eofWithData: eofWithData}, max)
		want := modelFrames(data, max)
		var got []string
		calls := 0
		for {
			calls++
			if calls > len(want)+bytes.Count(data, []byte("\n"))+2 {
				t.Fatalf("no io.EOF after %d calls; frames so far %q", calls, got)
			}
			frame, err := r.ReadFrame()
			if errors.Is(err, ErrFrameTooLarge) {
				var fe *FrameTooLargeError
				if !errors.As(err, &fe) || fe.Limit != max || frame != nil {
					t.Fatalf("too large: frame %q, err %#v (limit %d)", frame, err, max)
				}
				got = append(got, tooLargeMark+string(fe.Head))
				continue
			}
			if err == io.EOF {
				if frame != nil {
					t.Fatalf("frame %q returned with io.EOF", frame)
				}
				break
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if bytes.IndexByte(frame, '\n') >= 0 {
				t.Fatalf("frame %q holds a newline", frame)
			}
			if len(frame) > max {
				t.Fatalf("frame of %d bytes exceeds the %d-byte limit", len(frame), max)
			}
			if len(frame) == 0 || len(bytes.Trim(frame, " \t\r")) == 0 {
				t.Fatalf("blank frame %q", frame)
			}
			got = append(got, string(frame))
		}
		if !equal(got, want) {
			t.Fatalf("limit %d:\nframes %q\nwant   %q", max, got, want)
		}
		if frame, err := r.ReadFrame(); err != io.EOF || frame != nil {
			t.Fatalf("after io.EOF: ReadFrame = %q, %v", frame, err)
		}
	})
}
