package ndjson

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestLongLineAllocations bounds the memory allocated in all to read a line
// of the limit's size and to skip a line far over the limit: the spill
// buffer doubles, which takes two to three times the limit in all, where
// growing it by append's quarter steps took five times the limit.
func TestLongLineAllocations(t *testing.T) {
	const limit = 4 << 20
	for _, tt := range []struct {
		name string
		size int
	}{
		{"at the limit", limit},
		{"far over the limit", 16 * limit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line := bytes.Repeat([]byte("x"), tt.size)
			r := NewReader(io.MultiReader(bytes.NewReader(line), strings.NewReader("\nok\n")), limit)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := r.ReadFrame()
			runtime.ReadMemStats(&after)
			switch {
			case tt.size <= limit && (err != nil || len(f) != tt.size):
				t.Fatalf("ReadFrame = %d bytes, %v", len(f), err)
			case tt.size > limit && !errors.Is(err, ErrFrameTooLarge):
				t.Fatalf("ReadFrame err = %v, want ErrFrameTooLarge", err)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d-byte line: %d KiB allocated", tt.size, allocated>>10)
			if allocated > 3*limit+(1<<20) {
				t.Errorf("%d KiB allocated for a %d-byte line with a %d KiB limit", allocated>>10, tt.size, limit>>10)
			}
			if f, err := r.ReadFrame(); err != nil || string(f) != "ok" {
				t.Fatalf("next frame = %q, %v", f, err)
			}
		})
	}
}
