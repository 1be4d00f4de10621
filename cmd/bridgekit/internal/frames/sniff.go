package frames

import (
	"unicode/utf8"
)

// sniffFast is sniff without a decoder, for the lines it is sure of: a
// top-level object that is valid JSON up to its closing brace as jsontext
// reads it by default (no duplicate names at any depth, valid UTF-8,
// strict numbers and escapes). sniffSlow reads such an object's members
// all (nothing stops it before the brace), so their names settle its
// answer. Anything else (a name or protocol value with escapes, a \u
// escape of a surrogate, a malformed line, a deep or very wide object)
// is not ok, and left to sniffSlow: FuzzSniff checks that the two agree.
//
// names is scratch space for the member names, kept by the caller from
// line to line so that sniffing allocates nothing.
func sniffFast(line []byte, known Family, names *[][]byte) (Family, topMembers, bool) {
	var tm topMembers
	fam := Unknown
	sc := fastScanner{b: line, names: (*names)[:0]}
	defer func() { clear(sc.names[:cap(sc.names)]); *names = sc.names[:0] }()
	sc.space()
	if sc.i >= len(line) || line[sc.i] != '{' {
		return fam, tm, false
	}
	sc.i++
	mark := sc.pushObject()
	if sc.i = skipWS(line, sc.i); sc.i < len(line) && line[sc.i] == '}' {
		return fam, tm, true
	}
	for {
		name, ok := sc.name(mark)
		if !ok {
			return fam, tm, false
		}
		switch string(name) {
		case "jsonrpc":
			tm.jsonrpc = true
		case "payload":
			tm.payload = true
		case "result":
			tm.result = true
		case "protocol":
			if sc.i < len(line) && line[sc.i] == '"' {
				start := sc.i
				esc, ok := sc.str()
				if !ok || esc {
					return fam, tm, false
				}
				if f, ok := envelopeProtocols[string(line[start+1:sc.i-1])]; ok {
					fam = f
				}
				goto next
			}
		}
		if !sc.value() {
			return fam, tm, false
		}
	next:
		sc.space()
		if sc.i >= len(line) {
			return fam, tm, false
		}
		switch line[sc.i] {
		case ',':
			sc.i++
			sc.space()
			continue
		case '}':
		default:
			return fam, tm, false
		}
		break
	}
	if fam == Unknown && tm.jsonrpc {
		if known == Harn {
			return Harn, tm, true
		}
		return ACP, tm, true
	}
	return fam, tm, true
}

// Bounds of what fastScanner follows; beyond them it gives up.
const (
	fastMaxDepth   = 128
	fastMaxMembers = 64
)

// fastScanner validates JSON as jsontext's decoder does by default, for
// the common case only: it gives up (false) on anything it would need
// more care for.
type fastScanner struct {
	b     []byte
	i     int
	depth int
	// names holds the names of the members of the open objects, by
	// depth, for the duplicate check.
	names [][]byte
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (sc *fastScanner) space() { sc.i = skipWS(sc.b, sc.i) }

// pushObject opens an object's name set, returning where it starts.
func (sc *fastScanner) pushObject() int { return len(sc.names) }

// name reads a member name and its colon; the name must be new in its
// object (whose names start at mark) and have no escapes.
func (sc *fastScanner) name(mark int) ([]byte, bool) {
	if sc.i >= len(sc.b) || sc.b[sc.i] != '"' {
		return nil, false
	}
	start := sc.i
	esc, ok := sc.str()
	if !ok || esc || len(sc.names)-mark >= fastMaxMembers {
		return nil, false
	}
	name := sc.b[start+1 : sc.i-1]
	for _, n := range sc.names[mark:] {
		if string(n) == string(name) {
			return nil, false
		}
	}
	sc.names = append(sc.names, name)
	sc.space()
	if sc.i >= len(sc.b) || sc.b[sc.i] != ':' {
		return nil, false
	}
	sc.i++
	sc.space()
	return name, true
}

// plain marks the bytes a string holds as they are: printable ASCII
// other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string literal at sc.i (a '"'): esc says it has escapes.
func (sc *fastScanner) str() (esc, ok bool) {
	b := sc.b
	for j := sc.i + 1; j < len(b); {
		for j < len(b) && plain[b[j]] {
			j++
		}
		if j >= len(b) {
			break
		}
		c := b[j]
		switch {
		case c == '"':
			sc.i = j + 1
			return esc, true
		case c == '\\':
			if j+1 >= len(b) {
				return false, false
			}
			esc = true
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return false, false
				}
				var r rune
				for _, h := range b[j+2 : j+6] {
					switch {
					case '0' <= h && h <= '9':
						r = r<<4 | rune(h-'0')
					case 'a' <= h && h <= 'f':
						r = r<<4 | rune(h-'a'+10)
					case 'A' <= h && h <= 'F':
						r = r<<4 | rune(h-'A'+10)
					default:
						return false, false
					}
				}
				if 0xd800 <= r && r <= 0xdfff {
					return false, false // surrogates: left to jsontext
				}
				j += 6
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return false, false
			}
			j += size
		}
	}
	return false, false
}

// value reads one value at sc.i.
func (sc *fastScanner) value() bool {
	b := sc.b
	if sc.i >= len(b) {
		return false
	}
	switch c := b[sc.i]; {
	case c == '"':
		_, ok := sc.str()
		return ok
	case c == '{':
		if sc.depth++; sc.depth > fastMaxDepth {
			return false
		}
		mark := sc.pushObject()
		ok := sc.object(mark)
		sc.names = sc.names[:mark]
		sc.depth--
		return ok
	case c == '[':
		if sc.depth++; sc.depth > fastMaxDepth {
			return false
		}
		ok := sc.array()
		sc.depth--
		return ok
	case c == 't':
		return sc.literal("true")
	case c == 'f':
		return sc.literal("false")
	case c == 'n':
		return sc.literal("null")
	default:
		return sc.number()
	}
}

// object reads an object at sc.i, whose names start at mark.
func (sc *fastScanner) object(mark int) bool {
	b := sc.b
	sc.i++
	sc.space()
	if sc.i < len(b) && b[sc.i] == '}' {
		sc.i++
		return true
	}
	for {
		if _, ok := sc.name(mark); !ok || !sc.value() {
			return false
		}
		if another, ok := sc.more('}'); !another {
			return ok
		}
	}
}

// array reads an array at sc.i.
func (sc *fastScanner) array() bool {
	b := sc.b
	sc.i++
	sc.space()
	if sc.i < len(b) && b[sc.i] == ']' {
		sc.i++
		return true
	}
	for {
		if !sc.value() {
			return false
		}
		if another, ok := sc.more(']'); !another {
			return ok
		}
	}
}

// more reads what follows a container's element: a comma (another
// element follows) or the closing byte (ok, and no other); anything else
// is not ok.
func (sc *fastScanner) more(closing byte) (another, ok bool) {
	sc.space()
	if sc.i >= len(sc.b) {
		return false, false
	}
	switch sc.b[sc.i] {
	case ',':
		sc.i++
		sc.space()
		return true, true
	case closing:
		sc.i++
		return false, true
	}
	return false, false
}

func (sc *fastScanner) literal(lit string) bool {
	if len(sc.b)-sc.i < len(lit) || string(sc.b[sc.i:sc.i+len(lit)]) != lit {
		return false
	}
	sc.i += len(lit)
	return true
}

func (sc *fastScanner) number() bool {
	b, i := sc.b, sc.i
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
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	sc.i = i
	return true
}

// ScanString reads the JSON string literal at b[i] (a '"') as jsontext
// reads it by default: end is just past its closing quote, esc whether it
// has escapes. ok is false for a malformed literal, invalid UTF-8 or a
// \u escape of a surrogate (which jsontext may still take: ask it).
func ScanString(b []byte, i int) (end int, esc, ok bool) {
	sc := fastScanner{b: b, i: i}
	if i >= len(b) || b[i] != '"' {
		return 0, false, false
	}
	esc, ok = sc.str()
	return sc.i, esc, ok
}

// ScanValue reads the JSON value at b[i] as jsontext reads it by default
// and returns the index just past it. ok is false for what jsontext
// refuses, and for what it might take but this does not decide: a
// surrogate escape, a deep or very wide object, a duplicate name (which
// jsontext may allow, when told to).
func ScanValue(b []byte, i int) (end int, ok bool) {
	sc := fastScanner{b: b, i: i}
	ok = sc.value()
	return sc.i, ok
}
