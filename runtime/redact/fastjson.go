package redact

import (
	"bytes"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// This file is JSON's fast path: one pass over a document that reports,
// without allocating, that rewrite would return it unchanged. It judges
// each member name and each string value on its own, exactly as rewrite
// does (KeyName for names, the needles of String for values), so a name
// such as inputTokens or a word such as "tokens" in a value's neighbour
// costs nothing. Anything it is not sure of (a name with escapes, invalid
// UTF-8, a needle in a value, a deep or malformed document) it leaves to
// rewrite, which has the final say; FuzzCleanAgrees checks that the two
// agree.

// maxCleanDepth bounds the nesting clean follows; deeper documents go to
// rewrite.
const maxCleanDepth = 128

// A needle of a shape, and whether it is compared case-folded.
type needle struct {
	s    string
	fold bool
}

// needlesAt lists, by the byte they may start with (both cases for folded
// ones), the shapes' needles.
var needlesAt = func() (t [256][]needle) {
	for _, sh := range shapes {
		for _, n := range sh.needles {
			nd := needle{n, sh.fold}
			if !sh.fold {
				t[n[0]] = append(t[n[0]], nd)
				continue
			}
			t[lower(n[0])] = append(t[lower(n[0])], nd)
			if upper(n[0]) != lower(n[0]) {
				t[upper(n[0])] = append(t[upper(n[0])], nd)
			}
		}
	}
	return t
}()

// keyWordsAt lists keyWords by their first byte.
var keyWordsAt = func() (t [256][]string) {
	for _, w := range keyWords {
		t[w[0]] = append(t[w[0]], w)
	}
	return t
}()

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// clean reports whether doc is one valid JSON value (with white space
// around it) in which JSON masks nothing. false means "ask rewrite".
func (r *Redactor) clean(doc []byte) bool {
	const (
		stValue = iota // a value is next
		stAfter        // a value has ended
		stName         // a member name is next
	)
	var stack [maxCleanDepth]byte // '{' or '['
	depth := 0
	i := skipSpace(doc, 0)
	st := stValue
	for {
		switch st {
		case stValue:
			if i >= len(doc) {
				return false
			}
			switch c := doc[i]; {
			case c == '{' || c == '[':
				if depth == len(stack) {
					return false
				}
				stack[depth] = c
				depth++
				i = skipSpace(doc, i+1)
				if i < len(doc) && doc[i] == c+2 { // '}' or ']'
					depth--
					i++
					st = stAfter
				} else if c == '{' {
					st = stName
				}
			case c == '"':
				end, esc, ok := scanString(doc, i)
				if !ok || !r.cleanValue(doc[i:end], esc) {
					return false
				}
				i, st = end, stAfter
			case c == 't':
				if !bytes.HasPrefix(doc[i:], []byte("true")) {
					return false
				}
				i, st = i+4, stAfter
			case c == 'f':
				if !bytes.HasPrefix(doc[i:], []byte("false")) {
					return false
				}
				i, st = i+5, stAfter
			case c == 'n':
				if !bytes.HasPrefix(doc[i:], []byte("null")) {
					return false
				}
				i, st = i+4, stAfter
			default:
				n := scanNumber(doc[i:])
				if n == 0 {
					return false
				}
				i, st = i+n, stAfter
			}
		case stAfter:
			i = skipSpace(doc, i)
			if depth == 0 {
				return i == len(doc)
			}
			if i >= len(doc) {
				return false
			}
			switch c, top := doc[i], stack[depth-1]; {
			case c == ',':
				i = skipSpace(doc, i+1)
				st = stValue
				if top == '{' {
					st = stName
				}
			case c == top+2:
				depth--
				i++
			default:
				return false
			}
		case stName:
			if i >= len(doc) || doc[i] != '"' {
				return false
			}
			end, esc, ok := scanString(doc, i)
			if !ok || esc {
				return false
			}
			secret := keyName(doc[i+1 : end-1])
			i = skipSpace(doc, end)
			if i >= len(doc) || doc[i] != ':' {
				return false
			}
			i = skipSpace(doc, i+1)
			st = stValue
			if secret {
				// rewrite keeps null, true and false under a secret name
				// and masks anything else.
				rest := doc[i:]
				switch {
				case bytes.HasPrefix(rest, []byte("null")), bytes.HasPrefix(rest, []byte("true")):
					i, st = i+4, stAfter
				case bytes.HasPrefix(rest, []byte("false")):
					i, st = i+5, stAfter
				default:
					return false
				}
			}
		}
	}
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) {
		switch doc[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString reads the string literal starting at doc[i] (a '"'): end is
// just past its closing quote, esc whether it has escapes. ok is false for
// an unterminated literal, a control character or a malformed escape.
func scanString(doc []byte, i int) (end int, esc, ok bool) {
	for j := i + 1; j < len(doc); {
		switch c := doc[j]; {
		case c == '"':
			return j + 1, esc, true
		case c == '\\':
			if j+1 >= len(doc) {
				return 0, false, false
			}
			esc = true
			switch doc[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(doc) {
					return 0, false, false
				}
				for _, h := range doc[j+2 : j+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false, false
					}
				}
				j += 6
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		default:
			j++
		}
	}
	return 0, false, false
}

// scanNumber returns the length of the JSON number at the start of b, 0
// if there is none.
func scanNumber(b []byte) int {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		digits()
	default:
		return 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0
		}
	}
	return i
}

// cleanValue reports whether String leaves the string value lit (a JSON
// string literal, quotes included; esc says it has escapes) unchanged.
func (r *Redactor) cleanValue(lit []byte, esc bool) bool {
	s := lit[1 : len(lit)-1]
	if esc {
		var buf [512]byte
		d, err := jsontext.AppendUnquote(buf[:0], lit)
		if err != nil {
			return false
		}
		s = d
	}
	if r != nil {
		for _, v := range r.bvalues {
			if bytes.Contains(s, v) {
				return false
			}
		}
	}
	if len(s) < minShapeLen {
		return true
	}
	ascii := true
	for i, c := range s {
		if c >= utf8.RuneSelf {
			ascii = false
			continue
		}
		if needlesAt[c] != nil && needleAt(s[i:]) {
			return r.String(string(s)) == string(s)
		}
	}
	if !ascii {
		// Invalid UTF-8 is mangled by the decoder rewrite uses; KELVIN
		// SIGN and LATIN CAPITAL LETTER I WITH DOT ABOVE lower-case to
		// ASCII letters that folded needles hold.
		if !utf8.Valid(s) || bytes.Contains(s, []byte("\u212a")) || bytes.Contains(s, []byte("\u0130")) {
			return r.String(string(s)) == string(s)
		}
	}
	return true
}

// needleAt reports whether a shape's needle starts at s[0].
func needleAt(s []byte) bool {
	for _, n := range needlesAt[s[0]] {
		if len(n.s) > len(s) {
			continue
		}
		if n.fold {
			if foldHasPrefix(s, n.s) {
				return true
			}
		} else if string(s[:len(n.s)]) == n.s {
			return true
		}
	}
	return false
}

// foldHasPrefix reports whether s starts with n (lower-case ASCII),
// ignoring ASCII case.
func foldHasPrefix(s []byte, n string) bool {
	for i := range len(n) {
		if lower(s[i]) != n[i] {
			return false
		}
	}
	return true
}

// keyName is KeyName for a member name's raw bytes, without allocating
// when the name is short ASCII.
func keyName(name []byte) bool {
	var buf [64]byte
	n := buf[:0]
	for _, c := range name {
		if c >= utf8.RuneSelf {
			return KeyName(string(name))
		}
		switch c {
		case '-', '_', ' ':
			continue
		}
		if len(n) == len(buf) {
			return KeyName(string(name))
		}
		n = append(n, lower(c))
	}
	if bytes.HasSuffix(n, []byte("token")) || string(n) == "key" || string(n) == "pat" {
		return true
	}
	for i, c := range n {
		for _, w := range keyWordsAt[c] {
			if len(w) <= len(n)-i && string(n[i:i+len(w)]) == w {
				return true
			}
		}
	}
	return false
}
