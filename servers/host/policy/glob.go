package policy

import (
	"path"
	"strings"
)

// Overlap reports whether some slash-separated path could match both
// path patterns (permission.Glob's: "*", "?" and "[...]" within one
// element, "**" any number of elements). It errs towards yes: a character
// class is taken to meet any other class or character it might.
func Overlap(a, b string) bool {
	return segsOverlap(strings.Split(a, "/"), strings.Split(b, "/"), map[[2]int]bool{})
}

func segsOverlap(a, b []string, seen map[[2]int]bool) bool {
	var walk func(i, j int) bool
	walk = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := seen[key]; ok {
			return v
		}
		seen[key] = false // cycles (** against **) end here
		var r bool
		switch {
		case i == len(a) && j == len(b):
			r = true
		case i < len(a) && a[i] == "**":
			r = walk(i+1, j) || (j < len(b) && walk(i, j+1)) // none, or one more of b
		case j < len(b) && b[j] == "**":
			r = walk(i, j+1) || (i < len(a) && walk(i+1, j))
		case i == len(a) || j == len(b):
			r = false
		default:
			r = elemOverlap(a[i], b[j]) && walk(i+1, j+1)
		}
		seen[key] = r
		return r
	}
	return walk(0, 0)
}

// elemOverlap reports whether one path element could match both
// path.Match patterns x and y (no "/" in either).
func elemOverlap(x, y string) bool {
	xs, ys := tokens(x), tokens(y)
	memo := map[[2]int]int8{}
	var walk func(i, j int) bool
	walk = func(i, j int) bool {
		key := [2]int{i, j}
		if v := memo[key]; v != 0 {
			return v > 0
		}
		memo[key] = -1
		var r bool
		switch {
		case i == len(xs) && j == len(ys):
			r = true
		case i < len(xs) && xs[i].star:
			r = walk(i+1, j) || (j < len(ys) && walk(i, j+1))
		case j < len(ys) && ys[j].star:
			r = walk(i, j+1) || (i < len(xs) && walk(i+1, j))
		case i == len(xs) || j == len(ys):
			r = false
		default:
			r = xs[i].meets(ys[j]) && walk(i+1, j+1)
		}
		if r {
			memo[key] = 1
		}
		return r
	}
	return walk(0, 0)
}

// token is one element of a path.Match pattern: "*", or one character
// (a literal, "?", or a class, kept as written).
type token struct {
	star  bool
	any   bool   // "?"
	class string // "[...]", as written
	lit   rune
}

func (t token) meets(u token) bool {
	switch {
	case t.any || u.any:
		return true
	case t.class != "" && u.class != "":
		return true // erring towards yes
	case t.class != "":
		return classHas(t.class, u.lit)
	case u.class != "":
		return classHas(u.class, t.lit)
	}
	return t.lit == u.lit
}

func tokens(p string) []token {
	var out []token
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*':
			if len(out) == 0 || !out[len(out)-1].star {
				out = append(out, token{star: true})
			}
		case '?':
			out = append(out, token{any: true})
		case '[':
			j := i + 1
			if j < len(rs) && rs[j] == '^' {
				j++
			}
			if j < len(rs) && rs[j] == ']' {
				j++
			}
			for j < len(rs) && rs[j] != ']' {
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(rs) {
				out = append(out, token{any: true}) // malformed: CheckGlob refuses it
				i = len(rs)
				break
			}
			out = append(out, token{class: string(rs[i : j+1])})
			i = j
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			out = append(out, token{lit: rs[i]})
		default:
			out = append(out, token{lit: rs[i]})
		}
	}
	return out
}

// classHas reports whether the class "[...]" matches r.
func classHas(class string, r rune) bool {
	ok, err := path.Match(class, string(r))
	return ok || err != nil
}
