package terminal

import (
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestRingCuts(t *testing.T) {
	b := newRing(8)
	b.Write([]byte("abc"))
	if s, tr := b.read(); s != "abc" || tr {
		t.Fatalf("%q %v", s, tr)
	}
	b.Write([]byte("défghij")) // é is two bytes
	s, tr := b.read()
	if !tr || len(s) > 8 || !strings.HasSuffix(s, "ghij") || !utf8.ValidString(s) {
		t.Fatalf("%q %v", s, tr)
	}
	// A cut inside a character moves to the next character's start.
	b = newRing(3)
	b.Write([]byte("é€")) // 2 + 3 bytes
	if s, _ := b.read(); s != "€" {
		t.Fatalf("%q", s)
	}
	b = newRing(2)
	b.Write([]byte("€"))
	if s, tr := b.read(); s != "" || !tr {
		t.Fatalf("%q %v", s, tr)
	}
	b = newRing(0) // keeps nothing
	b.Write([]byte("abc"))
	if s, tr := b.read(); s != "" || !tr {
		t.Fatalf("%q %v", s, tr)
	}
}

// streamWriter adds a character split between two writes of one stream to
// the combined output whole, even when the other stream writes between.
func TestStreamWriter(t *testing.T) {
	var mu sync.Mutex
	all := newRing(64)
	out := &streamWriter{mu: &mu, own: newRing(64), all: all}
	errs := &streamWriter{mu: &mu, own: newRing(64), all: all}
	out.Write([]byte("a\xe2\x82")) // the start of €
	errs.Write([]byte("E"))
	out.Write([]byte("\xac"))
	errs.Write([]byte("\xc3")) // é, never finished
	out.Write([]byte("b"))
	if s, _ := all.read(); s != "aE€b" {
		t.Fatalf("combined %q", s)
	}
	errs.flush()
	out.flush()
	s, _ := all.read()
	o, _ := out.own.read()
	e, _ := errs.own.read()
	if s != "aE€b\uFFFD" || o != "a€b" || e != "E\uFFFD" {
		t.Fatalf("combined %q, stdout %q, stderr %q", s, o, e)
	}
}

// FuzzRing: whatever is written, in whatever pieces, read returns valid
// UTF-8 of at most the limit, and the tail of what was written when the
// input is valid UTF-8.
func FuzzRing(f *testing.F) {
	f.Add([]byte("hello, wörld"), 5, 3)
	f.Fuzz(func(t *testing.T, data []byte, limit, piece int) {
		if limit < 0 || limit > 1<<12 || piece < 1 {
			return
		}
		r := newRing(limit)
		writePieces(r, data, piece)
		s, tr := r.read()
		if !utf8.ValidString(s) || tr != (len(data) > limit) {
			t.Fatalf("%q %v", s, tr)
		}
		if utf8.Valid(data) && (len(s) > limit || !strings.HasSuffix(string(data), s)) {
			t.Fatalf("read %q of %q (limit %d)", s, data, limit)
		}
	})
}

// TestRingAcrossBlocks: a ring of several blocks, written in pieces of
// every size (a block's, more, less, more than the limit), keeps exactly
// the last limit bytes.
func TestRingAcrossBlocks(t *testing.T) {
	data := make([]byte, 9*ringBlock+123)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for _, limit := range []int{ringBlock, ringBlock + 1, 3*ringBlock - 7} {
		for _, piece := range []int{1000, ringBlock - 1, ringBlock, ringBlock + 5, 2*ringBlock + 3, 4 * ringBlock} {
			r := newRing(limit)
			writePieces(r, data, piece)
			s, tr := r.read()
			if !tr || s != string(data[len(data)-limit:]) {
				t.Fatalf("limit %d, pieces of %d: read %d bytes (truncated %v), not the last %d", limit, piece, len(s), tr, limit)
			}
		}
	}
}

// writePieces writes data to r in writes of piece bytes (the last one shorter).
func writePieces(r *ring, data []byte, piece int) {
	for rest := data; len(rest) > 0; {
		n := min(piece, len(rest))
		r.Write(rest[:n])
		rest = rest[n:]
	}
}
