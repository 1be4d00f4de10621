package validate

import (
	"bytes"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Equal reports whether the JSON documents a and b are structurally equal:
// the same members with equal values, member order and insignificant
// whitespace aside, strings equal once unescaped, numbers equal in value
// (1.0 and 1, 1e2 and 100). When they differ it returns the JSON pointer,
// relative to the documents, of the first difference and what it is.
func Equal(a, b []byte) (pointer, diff string, same bool) {
	x, err := parse(a)
	if err != nil {
		return "", "the original does not parse: " + err.Error(), false
	}
	y, err := parse(b)
	if err != nil {
		return "", "the re-encoding does not parse: " + err.Error(), false
	}
	return compare(x, y, "")
}

// value is a parsed JSON value: kind is the token kind ('{', '[', '"',
// '0', 't', 'f', 'n'); str the string or number; members (sorted by
// name) or elems the children.
type value struct {
	kind    jsontext.Kind
	str     string
	members []member
	elems   []value
}

type member struct {
	name string
	val  value
}

func parse(data []byte) (value, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	return parseValue(dec)
}

func parseValue(dec *jsontext.Decoder) (value, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return value{}, err
	}
	v := value{kind: tok.Kind()}
	switch v.kind {
	case '"':
		v.str = tok.String()
	case '0':
		v.str = tok.String()
	case '{':
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return v, err
			}
			name := tok.String()
			mv, err := parseValue(dec)
			if err != nil {
				return v, err
			}
			v.members = append(v.members, member{name, mv})
		}
		if _, err := dec.ReadToken(); err != nil {
			return v, err
		}
		slices.SortStableFunc(v.members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	case '[':
		for dec.PeekKind() != ']' {
			ev, err := parseValue(dec)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, ev)
		}
		if _, err := dec.ReadToken(); err != nil {
			return v, err
		}
	}
	return v, nil
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "nothing"
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func compare(x, y value, ptr string) (string, string, bool) {
	if x.kind != y.kind {
		return ptr, fmt.Sprintf("%s became %s", describe(x), describe(y)), false
	}
	switch x.kind {
	case '"':
		if x.str != y.str {
			return ptr, fmt.Sprintf("%q became %q", x.str, y.str), false
		}
	case '0':
		if x.str != y.str && !sameNumber(x.str, y.str) {
			return ptr, fmt.Sprintf("%s became %s", x.str, y.str), false
		}
	case '{':
		i, j := 0, 0
		for i < len(x.members) || j < len(y.members) {
			switch {
			case j == len(y.members) || i < len(x.members) && x.members[i].name < y.members[j].name:
				return ptr + "/" + escape(x.members[i].name), "the member is dropped", false
			case i == len(x.members) || x.members[i].name > y.members[j].name:
				return ptr + "/" + escape(y.members[j].name), fmt.Sprintf("a member is added (%s)", describe(y.members[j].val)), false
			}
			if p, d, ok := compare(x.members[i].val, y.members[j].val, ptr+"/"+escape(x.members[i].name)); !ok {
				return p, d, false
			}
			i++
			j++
		}
	case '[':
		if len(x.elems) != len(y.elems) {
			return ptr, fmt.Sprintf("an array of %d elements became one of %d", len(x.elems), len(y.elems)), false
		}
		for i := range x.elems {
			if p, d, ok := compare(x.elems[i], y.elems[i], fmt.Sprintf("%s/%d", ptr, i)); !ok {
				return p, d, false
			}
		}
	}
	return "", "", true
}

func describe(v value) string {
	switch v.kind {
	case '"':
		return fmt.Sprintf("%q", v.str)
	case '0':
		return v.str
	case 't':
		return "true"
	case 'f':
		return "false"
	}
	return kindName(v.kind)
}

func sameNumber(a, b string) bool {
	x, okx := new(big.Rat).SetString(a)
	y, oky := new(big.Rat).SetString(b)
	return okx && oky && x.Cmp(y) == 0
}
