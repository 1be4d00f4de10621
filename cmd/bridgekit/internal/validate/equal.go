package validate

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Equal reports whether the JSON documents a and b are structurally equal:
// the same members with equal values, member order and insignificant
// whitespace aside, strings equal once unescaped, numbers equal in value
// (1.0 and 1, 1e2 and 100). When they differ it returns the JSON pointer,
// relative to the documents, of the first difference and what it is.
func Equal(a, b []byte) (pointer, diff string, same bool) {
	var x, y tree
	return equalTrees(&x, a, &y, b)
}

// equalTrees is Equal with the trees to parse a and b into (and x holding
// a already when a is nil).
func equalTrees(x *tree, a []byte, y *tree, b []byte) (pointer, diff string, same bool) {
	if a != nil {
		if err := x.parse(a, false); err != nil {
			return "", "the original does not parse: " + err.Error(), false
		}
	}
	if err := y.parse(b, false); err != nil {
		return "", "the re-encoding does not parse: " + err.Error(), false
	}
	c := comparison{x: x, y: y}
	if c.equal(0, 0) {
		return "", "", true
	}
	// The pointer is built only for a difference, from the path kept.
	var sb strings.Builder
	for i := len(c.path) - 1; i >= 0; i-- {
		sb.WriteByte('/')
		sb.WriteString(escape(c.path[i]))
	}
	return sb.String(), c.diff, false
}

// comparison compares node trees x and y. On a difference, path holds
// the pointer's tokens, innermost first.
type comparison struct {
	x, y *tree
	path []string
	diff string
}

func (c *comparison) equal(i, j int32) bool {
	x, y := &c.x.nodes[i], &c.y.nodes[j]
	if x.kind != y.kind {
		c.diff = fmt.Sprintf("%s became %s", describe(c.x, x), describe(c.y, y))
		return false
	}
	switch x.kind {
	case '"':
		if xs, ys := c.x.str(x), c.y.str(y); !bytes.Equal(xs, ys) {
			c.diff = fmt.Sprintf("%q became %q", xs, ys)
			return false
		}
	case '0':
		if xs, ys := c.x.str(x), c.y.str(y); !bytes.Equal(xs, ys) && !sameNumber(string(xs), string(ys)) {
			c.diff = fmt.Sprintf("%s became %s", xs, ys)
			return false
		}
	case '{':
		xm, ym := c.x.members(x), c.y.members(y)
		i, j := 0, 0
		for i < len(xm) || j < len(ym) {
			var cmp int
			switch {
			case j == len(ym):
				cmp = -1
			case i == len(xm):
				cmp = 1
			default:
				cmp = bytes.Compare(c.x.name(xm[i]), c.y.name(ym[j]))
			}
			switch {
			case cmp < 0:
				c.path = append(c.path, string(c.x.name(xm[i])))
				c.diff = "the member is dropped"
				return false
			case cmp > 0:
				c.path = append(c.path, string(c.y.name(ym[j])))
				c.diff = fmt.Sprintf("a member is added (%s)", describe(c.y, &c.y.nodes[ym[j].val]))
				return false
			}
			if !c.equal(xm[i].val, ym[j].val) {
				c.path = append(c.path, string(c.x.name(xm[i])))
				return false
			}
			i++
			j++
		}
	case '[':
		xe, ye := c.x.members(x), c.y.members(y)
		if len(xe) != len(ye) {
			c.diff = fmt.Sprintf("an array of %d elements became one of %d", len(xe), len(ye))
			return false
		}
		for k := range xe {
			if !c.equal(xe[k].val, ye[k].val) {
				c.path = append(c.path, strconv.Itoa(k))
				return false
			}
		}
	}
	return true
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

func describe(t *tree, n *node) string {
	switch n.kind {
	case '"':
		return fmt.Sprintf("%q", t.str(n))
	case '0':
		return string(t.str(n))
	case 't':
		return "true"
	case 'f':
		return "false"
	}
	return kindName(n.kind)
}

func sameNumber(a, b string) bool {
	x, okx := new(big.Rat).SetString(a)
	y, oky := new(big.Rat).SetString(b)
	return okx && oky && x.Cmp(y) == 0
}
