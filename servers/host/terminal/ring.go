package terminal

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// ring keeps the last limit bytes written to it, in blocks of ringBlock
// bytes allocated as the output first reaches them, and then wraps: memory
// is bounded by limit, each write costs its own length, however much came
// before, and a growing ring never copies what it holds (a flood's cost
// is the bytes it writes, not the ring's growth).
type ring struct {
	mu     sync.Mutex
	limit  int
	blocks [][]byte // block i holds bytes [i*ringBlock, (i+1)*ringBlock) of the ring
	n      int      // bytes held, at most limit
	w      int      // where the next byte goes; once full, the oldest byte
	total  int64    // bytes ever written
}

const ringBlock = 64 << 10

func newRing(limit int) *ring { return &ring{limit: limit} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	r.total += int64(n)
	if r.limit <= 0 {
		return n, nil
	}
	if len(p) >= r.limit { // only its tail is kept, from the ring's start
		p = p[len(p)-r.limit:]
		r.w = 0
	}
	for len(p) > 0 {
		i, off := r.w/ringBlock, r.w%ringBlock
		if i == len(r.blocks) {
			r.blocks = append(r.blocks, make([]byte, min(ringBlock, r.limit-i*ringBlock)))
		}
		c := copy(r.blocks[i][off:], p)
		p = p[c:]
		r.n = min(r.limit, r.n+c)
		if r.w += c; r.w == r.limit {
			r.w = 0
		}
	}
	return n, nil
}

// appendRange appends the ring's bytes [from, to) to b.
func (r *ring) appendRange(b []byte, from, to int) []byte {
	for from < to {
		i, off := from/ringBlock, from%ringBlock
		blk := r.blocks[i][off:min(len(r.blocks[i]), off+to-from)]
		b = append(b, blk...)
		from += len(blk)
	}
	return b
}

// read returns the bytes kept as valid UTF-8 text, starting at a
// character boundary when the front was dropped (a character split between
// two writes is whole; invalid bytes become U+FFFD), and whether anything
// was dropped.
func (r *ring) read() (string, bool) {
	r.mu.Lock()
	b := make([]byte, 0, r.n)
	if r.n == r.limit { // full: the oldest byte is at w
		b = r.appendRange(r.appendRange(b, r.w, r.limit), 0, r.w)
	} else {
		b = r.appendRange(b, 0, r.n)
	}
	truncated := r.total > int64(len(b))
	r.mu.Unlock()
	if truncated { // start at the first character that is whole
		i := 0
		for i < len(b) && i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
			i++
		}
		b = b[i:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), truncated
}

// streamWriter is one stream of a command run with stdout and stderr
// apart: it keeps the stream in own and adds it to all, the output of
// both. So that all never has a character of one stream cut by the
// other's output, a character split between two writes is added to all
// once complete (or by flush).
type streamWriter struct {
	mu       *sync.Mutex // shared by both streams of a command
	own, all *ring
	partial  []byte
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.own.Write(p)
	buf := p
	if len(w.partial) > 0 {
		buf = append(w.partial, p...)
	}
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	w.all.Write(buf[:cut])
	w.partial = append([]byte(nil), buf[cut:]...)
	return len(p), nil
}

func (w *streamWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.all.Write(w.partial)
		w.partial = nil
	}
}

// fitJSON returns the longest tail of s, cut at a character boundary,
// whose JSON string encoding takes at most budget bytes, and whether it
// cut anything.
func fitJSON(s string, budget int) (string, bool) {
	size := 2 // the quotes
	for i := len(s); i > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		size += jsonLen(r, n)
		if size > budget {
			return s[i:], true
		}
		i -= n
	}
	return s, false
}

// jsonLen is how many bytes r (n bytes of UTF-8) takes inside a JSON
// string, escapes counted at their longest (\u00XX).
func jsonLen(r rune, n int) int {
	switch {
	case r < 0x20, r == '"', r == '\\', r == '<', r == '>', r == '&', r == 0x2028, r == 0x2029, r == utf8.RuneError:
		return 6
	}
	return n
}
