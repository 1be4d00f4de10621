package terminal

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// ring keeps the last limit bytes written to it, in a buffer that grows up
// to limit and then wraps: memory is bounded by limit, and each write costs
// its own length, however much came before.
type ring struct {
	mu    sync.Mutex
	limit int
	buf   []byte // len(buf) <= limit; once full, w is where the oldest byte is
	full  bool
	w     int
	total int64 // bytes ever written
}

func newRing(limit int) *ring { return &ring{limit: limit} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	r.total += int64(n)
	if r.limit <= 0 {
		return n, nil
	}
	if len(p) >= r.limit {
		r.buf = append(r.buf[:0], p[len(p)-r.limit:]...)
		r.full, r.w = true, 0
		return n, nil
	}
	if !r.full {
		room := r.limit - len(r.buf)
		if len(p) < room {
			r.buf = append(r.buf, p...)
			return n, nil
		}
		r.buf = append(r.buf, p[:room]...)
		p = p[room:]
		r.full, r.w = true, 0
	}
	c := copy(r.buf[r.w:], p)
	if c < len(p) {
		r.w = copy(r.buf, p[c:])
	} else if r.w += c; r.w == r.limit {
		r.w = 0
	}
	return n, nil
}

// read returns the bytes kept as valid UTF-8 text, starting at a
// character boundary when the front was dropped (a character split between
// two writes is whole; invalid bytes become U+FFFD), and whether anything
// was dropped.
func (r *ring) read() (string, bool) {
	r.mu.Lock()
	var b []byte
	if r.full {
		b = make([]byte, 0, len(r.buf))
		b = append(append(b, r.buf[r.w:]...), r.buf[:r.w]...)
	} else {
		b = append([]byte(nil), r.buf...)
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
