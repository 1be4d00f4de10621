package syncwriter

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// chunky writes what it is given one byte at a time, so that two
// unserialised Writes would interleave.
type chunky struct{ buf bytes.Buffer }

func (c *chunky) Write(p []byte) (int, error) {
	for _, b := range p {
		c.buf.WriteByte(b)
	}
	return len(p), nil
}

// Concurrent writes each reach the wrapped writer whole.
func TestWritesAreWhole(t *testing.T) {
	var c chunky
	w := New(&c)
	var wg sync.WaitGroup
	lines := []string{strings.Repeat("a", 512) + "\n", strings.Repeat("b", 512) + "\n"}
	for _, l := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if n, err := w.Write([]byte(l)); n != len(l) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		}()
	}
	wg.Wait()
	got := strings.SplitAfter(c.buf.String(), "\n")
	got = got[:len(got)-1]
	if len(got) != 400 {
		t.Fatalf("%d lines, want 400", len(got))
	}
	for i, l := range got {
		if l != lines[0] && l != lines[1] {
			t.Fatalf("line %d is interleaved: %.40q…", i, l)
		}
	}
}
