package codegen

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// An Error is one problem in the spec: the file it is in, relative to the
// repository root (spec/catalogue/acp.json, spec/schemas/harn-host.schema.json,
// spec/overrides.json), and the JSON pointer (RFC 6901) within that file
// of what is wrong, "" where the generator cannot tell (a JSON syntax
// error, a member the format does not know).
type Error struct {
	File, Pointer, Message string
}

func (e *Error) Error() string {
	if e.Pointer == "" {
		return e.File + ": " + e.Message
	}
	return e.File + "#" + e.Pointer + ": " + e.Message
}

// Errors are every problem a load or build found, sorted by file and
// pointer.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

func (es Errors) sort() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return strings.Compare(a.Pointer, b.Pointer)
	})
}

var (
	// schemaPrefix is the "<file>.json#<pointer>: " the schema loader and
	// the IR builder start a message about a schema node with.
	schemaPrefix = regexp.MustCompile(`^([A-Za-z0-9_./-]+\.json)#(/[^ :]*)?: `)
	// methodWhere and overlayWhere are the catalogue checks' "where".
	methodWhere  = regexp.MustCompile(`^methods\[\d+\] (\S+?):? `)
	overlayWhere = regexp.MustCompile(`^overlays\[(\d+)\]: `)
	overrideWhat = regexp.MustCompile(`^(\w+) entry (\S+) matches no schema node`)
	// overrideEntry is the IR's check of an override entry it applies
	// ("spec/overrides.json: represent entry <key>: ...").
	overrideEntry = regexp.MustCompile(`^spec/overrides\.json: (\w+) entry (\S+): `)
	// topWhere maps the first word of a catalogue-wide check to its member.
	topWhere = map[string]string{"protocol": "/protocol", "package": "/package", "framing": "/framing",
		"envelope": "/envelope", "schema": "/schemas", "import": "/imports", "side": "/sides", "a": "/sides",
		"annotations": "/annotations", "errors": "/errors", "derive": "/derive"}
)

// where is what locate needs of a catalogue file to turn a check's
// message into a JSON pointer; it is read loosely, so that it is there
// even for a catalogue the loader refuses.
type where struct {
	catalogue   bool
	Methods     []struct{ Wire, Params, Result any }
	Annotations map[string]json.RawMessage
}

func whereIn(data []byte) *where {
	w := &where{catalogue: true}
	_ = json.Unmarshal(data, w) // what cannot be read just locates nothing
	return w
}

// specErrors splits the error of loading or building file (a catalogue,
// when w is set) into one Error per problem, each with the file and JSON
// pointer its message names: a schema node's location, a catalogue
// method's or overlay's index, an override table entry.
func specErrors(file string, w *where, err error) Errors {
	if w == nil {
		w = &where{}
	}
	var out Errors
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "invalid catalogue:" || strings.HasSuffix(line, ".json:") {
			continue
		}
		line = strings.TrimPrefix(line, file+": ")
		out = append(out, w.locate(file, line))
	}
	if len(out) == 0 {
		out = append(out, &Error{File: file, Message: err.Error()})
	}
	return out
}

var unresolved = regexp.MustCompile(`^: \$ref "([^"]+)"`)

func (w *where) locate(file, msg string) *Error {
	e := &Error{File: file, Message: msg}
	if rest, ok := strings.CutPrefix(msg, "derive: "); ok && w.catalogue {
		e.Pointer, e.Message = "/derive", rest
	}
	if m := overrideEntry.FindStringSubmatch(e.Message); m != nil {
		e.File, e.Pointer, e.Message = "spec/overrides.json", "/"+m[1]+"/"+escape(m[2]), e.Message[len(m[0]):]
		return e
	}
	// A message about a schema node: the innermost location of the chain.
	for {
		m := schemaPrefix.FindStringSubmatch(e.Message)
		if m == nil {
			break
		}
		e.File, e.Pointer, e.Message = "spec/schemas/"+m[1], m[2], e.Message[len(m[0]):]
	}
	if e.File != file || !w.catalogue {
		if m := overrideWhat.FindStringSubmatch(e.Message); m != nil && file == "spec/overrides.json" {
			e.Pointer = "/" + m[1] + "/" + escape(m[2])
		}
		return e
	}
	if m := unresolved.FindStringSubmatch(e.Message); m != nil {
		// A reference of the catalogue's own (a method's params or result).
		e.Message = strings.TrimPrefix(e.Message, ": ")
		for i, meth := range w.Methods {
			for member, ref := range map[string]any{"params": meth.Params, "result": meth.Result} {
				if ref == m[1] {
					e.Pointer = "/methods/" + strconv.Itoa(i) + "/" + member
				}
			}
		}
		return e
	}
	if m := methodWhere.FindStringSubmatch(e.Message); m != nil {
		wire := m[1]
		if i := slices.IndexFunc(w.Methods, func(x struct{ Wire, Params, Result any }) bool { return x.Wire == wire }); i >= 0 {
			e.Pointer = "/methods/" + strconv.Itoa(i)
		} else if _, ok := w.Annotations[wire]; ok {
			e.Pointer = "/annotations/" + escape(wire)
		}
		return e
	}
	if m := overlayWhere.FindStringSubmatch(e.Message); m != nil {
		e.Pointer = "/overlays/" + m[1]
		return e
	}
	if e.Pointer == "" {
		word, _, _ := strings.Cut(e.Message, " ")
		e.Pointer = topWhere[strings.TrimSuffix(word, ":")]
	}
	return e
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
