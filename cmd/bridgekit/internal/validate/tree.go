package validate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

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
	rd  bytes.Reader
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
	t.nodes, t.kids, t.text, t.stack = t.nodes[:0], t.kids[:0], t.text[:0], t.stack[:0]
	t.rd.Reset(data)
	// Names are checked for duplicates here, once sorted: jsontext's own
	// check allocates for every object.
	if t.dec == nil {
		t.dec = jsontext.NewDecoder(&t.rd, jsontext.AllowDuplicateNames(true))
	} else {
		t.dec.Reset(&t.rd, jsontext.AllowDuplicateNames(true))
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
				if t.text, err = jsontext.AppendUnquote(t.text, raw); err != nil {
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
		a := len(t.kids)
		t.kids = append(t.kids, t.stack[base:]...)
		t.stack = t.stack[:base]
		if k == '{' {
			ms := t.kids[a:]
			t.sortMembers(ms)
			for j := 1; j < len(ms); j++ {
				if bytes.Equal(t.name(ms[j-1]), t.name(ms[j])) {
					return i, fmt.Errorf("%w %q", errDuplicate, t.name(ms[j]))
				}
			}
		}
		t.nodes[i].a, t.nodes[i].b = int32(a), int32(len(t.kids))
	case '"':
		raw, err := t.dec.ReadValue()
		if err != nil {
			return i, err
		}
		a := int32(len(t.text))
		if t.text, err = jsontext.AppendUnquote(t.text, raw); err != nil {
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

// sortMembers sorts members by name, stably: by insertion for the small
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
