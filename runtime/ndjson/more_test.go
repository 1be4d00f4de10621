package ndjson

import (
	"io"
	"testing"
)

// blockAfter returns its input, then blocks (a peer that keeps its end of
// the stream open) instead of reporting EOF.
type blockAfter struct {
	data    []byte
	blocked chan struct{}
}

func (b *blockAfter) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		<-b.blocked
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// TestMore checks that More reports true only when the next ReadFrame
// returns without reading: a buffered blank line is skipped by ReadFrame,
// which then reads on.
func TestMore(t *testing.T) {
	for _, tt := range []struct {
		in   string
		more []bool // after each frame
	}{
		{"a\nb\n", []bool{true, false}},
		{"a\n\n", []bool{false}},
		{"a\r\n\r\n", []bool{false}},
		{"a\n  \n\t\n", []bool{false}},
		{"a\n \nb\n", []bool{true, false}},
		{"a\n\nb", []bool{false}},
		{"a\nb", []bool{false}},
	} {
		src := &blockAfter{data: []byte(tt.in), blocked: make(chan struct{})}
		r := NewReader(src, 0)
		for i, want := range tt.more {
			if _, err := r.ReadFrame(); err != nil {
				t.Fatalf("%q: frame %d: %v", tt.in, i, err)
			}
			if got := r.More(); got != want {
				t.Errorf("%q: More() after frame %d = %v, want %v", tt.in, i, got, want)
			}
		}
		close(src.blocked)
	}
}
