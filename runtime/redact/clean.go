package redact

import (
	"bytes"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// clean reports whether JSON would return doc unchanged, without decoding
// and re-encoding it: doc is exactly one valid JSON value, no member with a
// secret-looking name holds a string, number, object or array, and no
// name, string or number holds a known value or a token shape. It reads
// doc in one pass and allocates only for a string with escapes or with a
// shape's needle, so a frame with nothing to mask costs a validation and a
// scan. clean may say false for a document JSON would not change (mask
// then finds so); it never says true for one it would.
func (r *Redactor) clean(doc []byte) bool {
	// The same value mask's decoder reads, but stricter: invalid UTF-8,
	// which mask replaces, is left to mask.
	if !jsontext.Value(doc).IsValid(jsontext.AllowDuplicateNames(true)) {
		return false
	}
	// Valid JSON from here on: the scan needs no error paths. objects
	// says, for each open container, whether it is an object; name,
	// whether the next string is a member name.
	var stack [32]bool
	objects := stack[:0]
	name := false
	var scratch []byte
	// What the whole document does not hold, no unescaped text of it
	// does: a text is searched for a needle or a known value only when
	// the document holds one or the text had escapes.
	docNeedle := hasNeedle(doc, true)
	docKnown := r.holdsKnown(doc)
	for i := 0; i < len(doc); {
		switch c := doc[i]; c {
		case '{', '[':
			objects = append(objects, c == '{')
			name = c == '{'
			i++
		case '}', ']':
			objects = objects[:len(objects)-1]
			name = false
			i++
		case ',':
			name = len(objects) > 0 && objects[len(objects)-1]
			i++
		case ':':
			name = false
			i++
		case '"':
			end, escaped := stringEnd(doc, i)
			text := doc[i+1 : end]
			if escaped {
				scratch, _ = jsontext.AppendUnquote(scratch[:0], doc[i:end+1])
				text = scratch
			}
			if !r.textKeeps(text, docNeedle || escaped, docKnown || escaped) {
				return false
			}
			i = end + 1
			if name {
				if secretName(text) && holdsValue(doc, i) {
					return false
				}
				name = false
			}
		case ' ', '\t', '\r', '\n':
			i++
		case 't', 'f', 'n':
			for i < len(doc) && doc[i] >= 'a' && doc[i] <= 'z' {
				i++
			}
		default: // a number
			start := i
			for i < len(doc) && isNumberByte(doc[i]) {
				i++
			}
			if !r.textKeeps(doc[start:i], docNeedle, docKnown) {
				return false
			}
		}
	}
	return true
}

// stringEnd returns the index of the quote that ends the string starting at
// doc[start] (a quote), and whether the string has escapes.
func stringEnd(doc []byte, start int) (int, bool) {
	escaped := false
	for i := start + 1; ; {
		j := bytes.IndexAny(doc[i:], `"\`)
		i += j
		if doc[i] == '"' {
			return i, escaped
		}
		escaped = true
		i += 2 // a backslash and the byte it escapes (\uXXXX's digits are no quote)
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// holdsValue reports whether the member value after the name ending at
// doc[i] is one mask replaces: a string, number, object or array (not
// null, true or false).
func holdsValue(doc []byte, i int) bool {
	for ; i < len(doc); i++ {
		switch doc[i] {
		case ' ', '\t', '\r', '\n', ':':
			continue
		case 't', 'f', 'n':
			return false
		}
		return true
	}
	return true
}

// holdsKnown reports whether b holds one of the values r masks.
func (r *Redactor) holdsKnown(b []byte) bool {
	if r == nil {
		return false
	}
	for _, v := range r.values {
		if bytes.Contains(b, []byte(v)) {
			return true
		}
	}
	return false
}

// textKeeps reports whether String would return text unchanged. mayNeedle
// says text may hold a shape's needle, mayKnown a known value (the
// document holds one somewhere, or text had escapes); without one, text
// that holds no known value keeps. Otherwise it asks String itself.
func (r *Redactor) textKeeps(text []byte, mayNeedle, mayKnown bool) bool {
	if mayKnown && r.holdsKnown(text) {
		return false
	}
	if len(text) < minShapeLen {
		return true
	}
	// Two runes lower-case to ASCII letters (the Kelvin sign to k, the
	// dotted capital I to i), so String's case-folded search may find a
	// needle the bytes do not show.
	folds := bytes.Contains(text, kelvin) || bytes.Contains(text, dottedI)
	if !folds && (!mayNeedle || !hasNeedle(text, bytes.ContainsAny(text, foldGate))) {
		return true
	}
	s := string(text)
	return r.String(s) == s
}

var kelvin, dottedI = []byte("\u212a"), []byte("\u0130")

// The shapes' needles by their first byte: exact ones by the byte, folded
// ones by its lower case.
var exactNeedles, foldNeedles = func() (exact, fold [256][][]byte) {
	for _, sh := range shapes {
		for _, n := range sh.needles {
			if sh.fold {
				fold[n[0]] = append(fold[n[0]], []byte(n))
			} else {
				exact[n[0]] = append(exact[n[0]], []byte(n))
			}
		}
	}
	return exact, fold
}()

// foldGate holds the bytes every case-folded shape needs after its needle
// (whitespace after "bearer" or "token", '=' or ':' after "password"):
// text without any of them cannot match one.
const foldGate = " \t\n\f\r=:"

// exactPairs and foldPairs hold the first two bytes of every needle,
// exact ones as they are and folded ones in every ASCII case, as bit sets
// of 16-bit pairs: hasNeedle looks at the needles of a position only when
// its pair is in one (every needle has at least two bytes).
var exactPairs, foldPairs = func() (exact, fold [1 << 16 / 64]uint64) {
	set := func(t *[1 << 16 / 64]uint64, a, b byte) {
		p := uint16(a)<<8 | uint16(b)
		t[p/64] |= 1 << (p % 64)
	}
	for _, sh := range shapes {
		for _, n := range sh.needles {
			if !sh.fold {
				set(&exact, n[0], n[1])
				continue
			}
			for _, a := range []byte{n[0], upperASCII(n[0])} {
				for _, b := range []byte{n[1], upperASCII(n[1])} {
					set(&fold, a, b)
				}
			}
		}
	}
	return exact, fold
}()

func hasPair(t *[1 << 16 / 64]uint64, a, b byte) bool {
	p := uint16(a)<<8 | uint16(b)
	return t[p/64]&(1<<(p%64)) != 0
}

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// hasNeedle reports whether text holds a shape's needle, in one pass; a
// folded one in any ASCII case, when fold is set.
func hasNeedle(text []byte, fold bool) bool {
	for i := 0; i+1 < len(text); i++ {
		c, d := text[i], text[i+1]
		exact, folded := hasPair(&exactPairs, c, d), fold && hasPair(&foldPairs, c, d)
		if !exact && !folded {
			continue
		}
		for _, n := range exactNeedles[c] {
			if bytes.HasPrefix(text[i:], n) {
				return true
			}
		}
		if !folded {
			continue
		}
		for _, n := range foldNeedles[lowerASCII(c)] {
			if hasPrefixFold(text[i:], n) {
				return true
			}
		}
	}
	return false
}

// hasPrefixFold reports whether text starts with needle (lower-case ASCII)
// in any ASCII case.
func hasPrefixFold(text, needle []byte) bool {
	if len(text) < len(needle) {
		return false
	}
	for k, c := range needle {
		if lowerASCII(text[k]) != c {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// keyWordsBy holds keyWords by their first byte.
var keyWordsBy = func() (out [256][][]byte) {
	for _, w := range keyWords {
		out[w[0]] = append(out[w[0]], []byte(w))
	}
	return out
}()

// secretName is KeyName for a name's bytes, without allocating for an
// ASCII name of up to 64 bytes.
func secretName(name []byte) bool {
	var buf [64]byte
	if len(name) > len(buf) {
		return KeyName(string(name))
	}
	n := buf[:0]
	for _, c := range name {
		if c >= utf8.RuneSelf {
			return KeyName(string(name))
		}
		if c != '-' && c != '_' && c != ' ' {
			n = append(n, lowerASCII(c))
		}
	}
	if bytes.HasSuffix(n, []byte("token")) || string(n) == "key" || string(n) == "pat" {
		return true
	}
	for i, c := range n {
		for _, w := range keyWordsBy[c] {
			if bytes.HasPrefix(n[i:], w) {
				return true
			}
		}
	}
	return false
}
