package validate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// tree is a parsed JSON document held in flat slices that are reused from
// document to document, so that parsing a frame's body allocates nothing
// once the slices have grown: the one parse of a body feeds both the
// schema check (fastschema.go) and the structural comparison (equal.go).
//
// Node 0 is the root. An object's members are sorted by name (stably, the
// order Equal compares them in and the order required members are looked
// up in); names and strings are held unescaped in text.
type tree struct {
	nodes []node
	kids  []kid
	text  []byte
	stack []kid

	dec *jsontext.Decoder
	in  bytes.Buffer // the document, read in place by dec
}

// node is one JSON value: kind is its token kind ('{', '[', '"', '0', 't',
// 'f', 'n'); a string's or number's text is text[a:b], an object's
// members or an array's elements kids[a:b].
type node struct {
	kind jsontext.Kind
	a, b int32
}

// kid is an element of an array or a member of an object (named
// text[n0:n1]); val is its node.
type kid struct {
	n0, n1 int32
	val    int32
}

var (
	errTrailing  = errors.New("data after the JSON value")
	errDuplicate = errors.New("duplicate object member name")
)

// parse parses the JSON value data starts with, as jsontext reads it by
// default: duplicate member names and invalid UTF-8 are errors. With
// whole, anything but whitespace after the value is an error too.
func (t *tree) parse(data []byte, whole bool) error {
	if t.parseFast(data) {
		return nil
	}
	// Not a plain document, or not JSON: jsontext decides, and says why.
	return t.parseDecoder(data, whole)
}

// parseDecoder is parse by jsontext's decoder.
func (t *tree) parseDecoder(data []byte, whole bool) error {
	t.nodes, t.kids, t.text, t.stack = t.nodes[:0], t.kids[:0], t.text[:0], t.stack[:0]
	// A bytes.Buffer is decoded in place, without a copy.
	t.in = *bytes.NewBuffer(data)
	// Names are checked for duplicates here, once sorted: jsontext's own
	// check allocates for every object.
	if t.dec == nil {
		t.dec = jsontext.NewDecoder(&t.in, jsontext.AllowDuplicateNames(true))
	} else {
		t.dec.Reset(&t.in, jsontext.AllowDuplicateNames(true))
	}
	if _, err := t.value(); err != nil {
		return err
	}
	if !whole {
		return nil
	}
	if _, err := t.dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errTrailing
		}
		return err
	}
	return nil
}

func (t *tree) value() (int32, error) {
	i := int32(len(t.nodes))
	switch k := t.dec.PeekKind(); k {
	case '{', '[':
		if _, err := t.dec.ReadToken(); err != nil {
			return i, err
		}
		t.nodes = append(t.nodes, node{kind: k})
		end := jsontext.Kind(']')
		if k == '{' {
			end = '}'
		}
		base := len(t.stack)
		for t.dec.PeekKind() != end {
			var kd kid
			if k == '{' {
				raw, err := t.dec.ReadValue()
				if err != nil {
					return i, err
				}
				kd.n0 = int32(len(t.text))
				if t.text, err = unquote(t.text, raw); err != nil {
					return i, err
				}
				kd.n1 = int32(len(t.text))
			}
			v, err := t.value()
			if err != nil {
				return i, err
			}
			kd.val = v
			t.stack = append(t.stack, kd)
		}
		if _, err := t.dec.ReadToken(); err != nil {
			return i, err
		}
		if dup := t.closeNode(i, base, k == '{'); dup != nil {
			return i, fmt.Errorf("%w %q", errDuplicate, dup)
		}
	case '"':
		raw, err := t.dec.ReadValue()
		if err != nil {
			return i, err
		}
		a := int32(len(t.text))
		if t.text, err = unquote(t.text, raw); err != nil {
			return i, err
		}
		t.nodes = append(t.nodes, node{kind: k, a: a, b: int32(len(t.text))})
	case '0':
		raw, err := t.dec.ReadValue()
		if err != nil {
			return i, err
		}
		a := int32(len(t.text))
		t.text = append(t.text, raw...)
		t.nodes = append(t.nodes, node{kind: k, a: a, b: int32(len(t.text))})
	case 't', 'f', 'n':
		if _, err := t.dec.ReadValue(); err != nil {
			return i, err
		}
		t.nodes = append(t.nodes, node{kind: k})
	default:
		_, err := t.dec.ReadToken()
		if err == nil {
			err = errors.New("unexpected token")
		}
		return i, err
	}
	return i, nil
}

// unquote appends the string raw, a JSON string the decoder has read (and
// so checked), unescaped to dst.
func unquote(dst, raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return append(dst, raw[1:len(raw)-1]...), nil
	}
	return jsontext.AppendUnquote(dst, raw)
}

// sortMembers sorts members by name, stably: by insertion for the small

// closeNode ends container node i, whose children are t.stack[base:]:
// they move to t.kids, an object's sorted by name. It returns the name
// that an object repeats, if any (the node is then not to be used).
func (t *tree) closeNode(i int32, base int, object bool) []byte {
	a := len(t.kids)
	t.kids = append(t.kids, t.stack[base:]...)
	t.stack = t.stack[:base]
	if object {
		ms := t.kids[a:]
		t.sortMembers(ms)
		for j := 1; j < len(ms); j++ {
			if bytes.Equal(t.name(ms[j-1]), t.name(ms[j])) {
				return t.name(ms[j])
			}
		}
	}
	t.nodes[i].a, t.nodes[i].b = int32(a), int32(len(t.kids))
	return nil
}

// objects protocol bodies are made of.
func (t *tree) sortMembers(ms []kid) {
	if len(ms) > 16 {
		slices.SortStableFunc(ms, func(x, y kid) int { return bytes.Compare(t.name(x), t.name(y)) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && bytes.Compare(t.name(ms[j-1]), t.name(ms[j])) > 0; j-- {
			ms[j-1], ms[j] = ms[j], ms[j-1]
		}
	}
}

func (t *tree) name(k kid) []byte { return t.text[k.n0:k.n1] }

// str is the text of a string or number node.
func (t *tree) str(n *node) []byte { return t.text[n.a:n.b] }

// members is an object's members or an array's elements.
func (t *tree) members(n *node) []kid { return t.kids[n.a:n.b] }

// member returns the value of obj's member name, or -1.
func (t *tree) member(obj *node, name string) int32 {
	ms := t.members(obj)
	lo, hi := 0, len(ms)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if string(t.name(ms[m])) < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ms) && string(t.name(ms[lo])) == name {
		return ms[lo].val
	}
	return -1
}

// maxFastDepth bounds the nesting parseFast reads; deeper documents go to
// jsontext (whose limit is higher).
const maxFastDepth = 512

// parseFast parses data when it is exactly one JSON value (whitespace
// around it aside) that jsontext accepts by default, without jsontext's
// per-token cost, and reports whether it did; for anything else (not
// JSON, a duplicate name, deep nesting, data after the value) it gives up
// and parse asks jsontext. It never accepts what jsontext refuses: its
// strings with escapes are unquoted by jsontext, and FuzzTreeParse holds
// it to jsontext's answers and values.
func (t *tree) parseFast(data []byte) bool {
	t.nodes, t.kids, t.text, t.stack = t.nodes[:0], t.kids[:0], t.text[:0], t.stack[:0]
	p := fastParser{t: t, d: data}
	p.ws()
	if !p.value(0) {
		return false
	}
	p.ws()
	return p.pos == len(data)
}

type fastParser struct {
	t   *tree
	d   []byte
	pos int
}

func (p *fastParser) ws() {
	for p.pos < len(p.d) {
		switch p.d[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *fastParser) peek() byte {
	if p.pos < len(p.d) {
		return p.d[p.pos]
	}
	return 0
}

func (p *fastParser) value(depth int) bool {
	t := p.t
	switch c := p.peek(); c {
	case '{', '[':
		if depth >= maxFastDepth {
			return false
		}
		i := int32(len(t.nodes))
		t.nodes = append(t.nodes, node{kind: jsontext.Kind(c)})
		p.pos++
		base := len(t.stack)
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		p.ws()
		if p.peek() == end {
			p.pos++
		} else {
			for {
				var kd kid
				if c == '{' {
					kd.n0 = int32(len(t.text))
					if p.peek() != '"' || !p.str() {
						return false
					}
					kd.n1 = int32(len(t.text))
					p.ws()
					if p.peek() != ':' {
						return false
					}
					p.pos++
					p.ws()
				}
				kd.val = int32(len(t.nodes))
				if !p.value(depth + 1) {
					return false
				}
				t.stack = append(t.stack, kd)
				p.ws()
				switch p.peek() {
				case ',':
					p.pos++
					p.ws()
					continue
				case end:
					p.pos++
				default:
					return false
				}
				break
			}
		}
		return t.closeNode(i, base, c == '{') == nil
	case '"':
		a := int32(len(t.text))
		if !p.str() {
			return false
		}
		t.nodes = append(t.nodes, node{kind: '"', a: a, b: int32(len(t.text))})
		return true
	case 't':
		return p.literal("true", 't')
	case 'f':
		return p.literal("false", 'f')
	case 'n':
		return p.literal("null", 'n')
	default:
		start := p.pos
		if !p.number() {
			return false
		}
		a := int32(len(t.text))
		t.text = append(t.text, p.d[start:p.pos]...)
		t.nodes = append(t.nodes, node{kind: '0', a: a, b: int32(len(t.text))})
		return true
	}
}

func (p *fastParser) literal(lit string, k jsontext.Kind) bool {
	if !bytes.HasPrefix(p.d[p.pos:], []byte(lit)) {
		return false
	}
	p.pos += len(lit)
	p.t.nodes = append(p.t.nodes, node{kind: k})
	return true
}

// str reads the string at p.pos and appends it, unescaped, to the text.
func (p *fastParser) str() bool {
	j := p.pos + 1
	escaped, ascii := false, true
	for {
		if j >= len(p.d) {
			return false
		}
		c := p.d[j]
		switch {
		case c == '"':
			raw := p.d[p.pos : j+1]
			p.pos = j + 1
			if escaped {
				var err error
				p.t.text, err = jsontext.AppendUnquote(p.t.text, raw)
				return err == nil
			}
			if !ascii && !utf8.Valid(raw[1:len(raw)-1]) {
				return false
			}
			p.t.text = append(p.t.text, raw[1:len(raw)-1]...)
			return true
		case c == '\\':
			escaped = true
			j += 2
			continue
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		j++
	}
}

// number reads a number as RFC 8259 writes it.
func (p *fastParser) number() bool {
	d, j := p.d, p.pos
	digits := func() bool {
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(d) && d[j] == '-' {
		j++
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && d[j] >= '1' && d[j] <= '9':
		digits()
	default:
		return false
	}
	if j < len(d) && d[j] == '.' {
		j++
		if !digits() {
			return false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if !digits() {
			return false
		}
	}
	p.pos = j
	return true
}
