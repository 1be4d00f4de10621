package ndjson

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Readers share their large buffers: many readers at once, each reading
// long lines of several sizes between short ones, each get their own
// lines intact, and a frame stays valid (and unchanged) until its
// reader's next call, while the others go on.
func TestLargeBuffersShared(t *testing.T) {
	sizes := []int{70_000, 10, 200_000, 65_536, 5, 1 << 20, 130_000, 3}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			pr, pw := io.Pipe()
			go func() {
				for round := range 5 {
					for i, n := range sizes {
						pw.Write([]byte(strings.Repeat(string(rune('a'+(g+round+i)%26)), n) + "\n"))
					}
				}
				pw.Close()
			}()
			r := NewReader(pr, 2<<20)
			for round := range 5 {
				for i, n := range sizes {
					line, err := r.ReadFrame()
					if err != nil {
						t.Errorf("reader %d, line %d: %v", g, i, err)
						return
					}
					c := byte('a' + (g+round+i)%26)
					if len(line) != n || bytes.IndexFunc(line, func(r rune) bool { return r != rune(c) }) >= 0 {
						t.Errorf("reader %d, round %d, line %d: %d bytes, want %d of %q", g, round, i, len(line), n, c)
						return
					}
				}
			}
			if _, err := r.ReadFrame(); err != io.EOF {
				t.Errorf("reader %d: %v at the end, want io.EOF", g, err)
			}
		})
	}
	wg.Wait()
}

// TestLongLineAllocs: long lines one after another do not allocate a large buffer each once
// the pool holds one: per line, about the 4 KiB an idle reader holds, not
// the 64 + 128 KiB it grows through (the figure is an average, and a
// garbage collection may empty the pool now and then).
func TestLongLineAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops buffers on purpose")
	}
	line := []byte(strings.Repeat("z", 70_000) + "\n")
	r := NewReader(&repeater{line: line}, 0)
	r.ReadFrame()
	const n = 500
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := r.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if perLine := (after.TotalAlloc - before.TotalAlloc) / n; perLine > 16<<10 {
		t.Fatalf("%d bytes allocated per long line, want about the idle buffer's 4 KiB", perLine)
	}
}

// repeater yields line forever, in reads of at most 16 KiB, as a pipe does.
type repeater struct {
	line []byte
	off  int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := copy(p[:min(len(p), 16<<10)], r.line[r.off:])
	r.off = (r.off + n) % len(r.line)
	return n, nil
}
