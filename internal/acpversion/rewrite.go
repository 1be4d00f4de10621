package acpversion

import (
	"bytes"
	"errors"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpv2"
)

// unknownImplementation stands in for a missing or malformed v2 info in an initialize written for a newer
// version than the one selected.
const unknownImplementation = `{"name":"unknown","version":"unknown"}`

// maxDrops bounds how many malformed members one decode may drop before giving up on the value that
// holds them: each drop re-reads the value, so the work stays within a small multiple of its size.
const maxDrops = 16

// RewriteInitialize rewrites the params of an initialize that requested version requested for the
// implementation of version selected, as the TypeScript SDK's router does:
//   - requested = selected (or a v1-only agent asked for 0): a strict decode for that version, with
//     protocolVersion set to the selected one; a malformed optional member (a capability, clientInfo,
//     _meta) is dropped, as the schema's default-on-error members are, and a malformed v2 info is an
//     error;
//   - a v2 agent asked for a newer version: the same, but a missing or malformed info becomes
//     {"name":"unknown","version":"unknown"};
//   - a v1 agent asked for 2 or more: the v2 params are downgraded to v1's shape: protocolVersion 1,
//     clientCapabilities with no fs and no terminal (v2 has neither), session config options, plan,
//     auth.terminal when v2's capabilities.auth.terminal is set, elicitation and _meta carried over,
//     clientInfo from a valid info, and the params' _meta.
//
// Null members and empty arrays are then removed outside _meta (serde's canonical form, which the
// TypeScript router mirrors). Members the schema does not name are kept (see the package doc).
func RewriteInitialize(params jsontext.Value, requested, selected int) (jsontext.Value, error) {
	switch {
	case selected == V1 && requested < V2:
		return rewriteV1(params)
	case selected == V1:
		p, hasInfo, err := parseV2(params, true)
		if err != nil {
			return nil, err
		}
		return downgrade(p, hasInfo)
	case selected == V2:
		p, _, err := parseV2(params, requested > V2)
		if err != nil {
			return nil, err
		}
		p.set("protocolVersion", jsontext.Value("2"))
		out := canonical(p.encode())
		if err := json.Unmarshal(out, new(acpv2.InitializeRequest)); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, errors.New("no such protocol version")
}

// DowngradeInitialize rewrites v2 initialize params into the v1 params a v1 agent gets from the router:
// what a client that asked for v2 and was answered -32022 by an agent serving v1 alone sends instead
// (clients/acpnegotiate), unless it has v1 params of its own.
func DowngradeInitialize(v2params jsontext.Value) (jsontext.Value, error) {
	return RewriteInitialize(v2params, V2, V1)
}

// rewriteV1 is the strict v1 rewrite.
func rewriteV1(params jsontext.Value) (jsontext.Value, error) {
	p, err := members(params)
	if err != nil {
		return nil, err
	}
	p.optional("clientCapabilities", func(b []byte) error { return json.Unmarshal(b, new(acp.ClientCapabilities)) }, anyMember)
	p.optional("clientInfo", func(b []byte) error { return json.Unmarshal(b, new(acp.Implementation)) }, optionalOfImplementation)
	p.meta("_meta")
	p.set("protocolVersion", jsontext.Value("1"))
	out := canonical(p.encode())
	if err := json.Unmarshal(out, new(acp.InitializeRequest)); err != nil {
		return nil, err
	}
	return out, nil
}

// parseV2 reads v2 params, dropping malformed optional members. A malformed or missing info is an
// error, or, when lenient, is replaced by unknownImplementation (hasInfo false).
func parseV2(params jsontext.Value, lenient bool) (p fields, hasInfo bool, err error) {
	if p, err = members(params); err != nil {
		return nil, false, err
	}
	decodeInfo := func(b []byte) error { return json.Unmarshal(b, new(acpv2.Implementation)) }
	if info := p.get("info"); info == nil {
		err = errors.New(`missing required member "info"`)
	} else if info, err = prune(info, decodeInfo, optionalOfImplementation); err == nil {
		p.set("info", info)
		hasInfo = true
	}
	if err != nil {
		if !lenient {
			return nil, false, err
		}
		p.set("info", jsontext.Value(unknownImplementation))
	}
	// capabilities defaults to {} when absent or malformed, as in the schema.
	caps := p.get("capabilities")
	if caps == nil || caps.Kind() == 'n' {
		caps = jsontext.Value("{}")
	} else if caps, err = prune(caps, func(b []byte) error { return json.Unmarshal(b, new(acpv2.ClientCapabilities)) }, anyMember); err != nil {
		caps = jsontext.Value("{}")
	}
	p.set("capabilities", caps)
	p.meta("_meta")
	return p, hasInfo, nil
}

// downgrade maps parsed v2 params to v1's.
func downgrade(p fields, hasInfo bool) (jsontext.Value, error) {
	caps, _ := members(p.get("capabilities"))
	auth, _ := members(caps.get("auth"))
	v1auth := fields{{"terminal", jsontext.Value("false")}}
	if t := auth.get("terminal"); t != nil && t.Kind() != 'n' {
		v1auth[0].value = jsontext.Value("true")
	}
	if m := auth.get("_meta"); m != nil && m.Kind() != 'n' {
		v1auth = append(v1auth, field{"_meta", m})
	}
	cc := fields{
		{"fs", jsontext.Value(`{"readTextFile":false,"writeTextFile":false}`)},
		{"terminal", jsontext.Value("false")},
		{"session", jsontext.Value(`{"configOptions":{"boolean":{}}}`)},
		{"plan", jsontext.Value("{}")},
		{"auth", v1auth.encode()},
	}
	for _, name := range []string{"elicitation", "_meta"} {
		if v := caps.get(name); v != nil && v.Kind() != 'n' {
			cc = append(cc, field{name, v})
		}
	}
	out := fields{{"protocolVersion", jsontext.Value("1")}, {"clientCapabilities", cc.encode()}}
	if hasInfo {
		out = append(out, field{"clientInfo", p.get("info")})
	}
	if m := p.get("_meta"); m != nil && m.Kind() != 'n' {
		out = append(out, field{"_meta", m})
	}
	// The v1 decode drops what v1 cannot take (a v2 elicitation of another shape).
	return rewriteV1(out.encode())
}

// anyMember lets prune drop any member below the value it decodes.
func anyMember(tokens []string) bool { return len(tokens) > 0 }

// optionalOfImplementation lets prune drop an Implementation's optional members.
func optionalOfImplementation(tokens []string) bool {
	return len(tokens) > 0 && (tokens[0] == "title" || tokens[0] == "_meta")
}

// prune decodes raw with decode and, while decoding fails at a member droppable says may go, drops that
// member and tries again (at most maxDrops times). It returns what decoded.
func prune(raw jsontext.Value, decode func([]byte) error, droppable func(tokens []string) bool) (jsontext.Value, error) {
	for range maxDrops {
		err := decode(raw)
		if err == nil {
			return raw, nil
		}
		var se *json.SemanticError
		if !errors.As(err, &se) {
			return nil, err
		}
		tokens := slices.Collect(se.JSONPointer.Tokens())
		if !droppable(tokens) {
			return nil, err
		}
		var ok bool
		if raw, ok = dropAt(raw, tokens); !ok {
			return nil, err
		}
	}
	return nil, errors.New("too many malformed members")
}

// dropAt removes from the object raw the member the pointer tokens name; when the pointer goes on
// through an array or past a member that is no object, the member holding it goes. It reports false
// when raw has no such member.
func dropAt(raw jsontext.Value, tokens []string) (jsontext.Value, bool) {
	if len(tokens) == 0 || raw.Kind() != '{' {
		return raw, false
	}
	fs, err := members(raw)
	if err != nil {
		return raw, false
	}
	i := fs.index(tokens[0])
	if i < 0 {
		return raw, false
	}
	if inner, ok := dropAt(fs[i].value, tokens[1:]); ok {
		fs[i].value = inner
	} else {
		fs = slices.Delete(fs, i, i+1)
	}
	return fs.encode(), true
}

// canonical removes null members and empty arrays from every object of v but the values of _meta. It
// reads v once, token by token, so that its cost is linear in v's size however deep v is.
func canonical(v jsontext.Value) jsontext.Value {
	var b bytes.Buffer
	enc := jsontext.NewEncoder(&b)
	if err := canonicalValue(jsontext.NewDecoder(bytes.NewReader(v)), enc); err != nil {
		return v // not reached: v decoded before
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func canonicalValue(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		if err := enc.WriteToken(jsontext.BeginObject); err != nil {
			return err
		}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			name := tok.String()
			switch kind := dec.PeekKind(); {
			case kind == 'n':
				if err := dec.SkipValue(); err != nil {
					return err
				}
				continue
			case name == "_meta":
				val, err := dec.ReadValue()
				if err != nil {
					return err
				}
				if err := enc.WriteToken(jsontext.String(name)); err != nil {
					return err
				}
				if err := enc.WriteValue(val); err != nil {
					return err
				}
				continue
			case kind == '[':
				if _, err := dec.ReadToken(); err != nil {
					return err
				}
				if dec.PeekKind() == ']' { // an empty array goes
					if _, err := dec.ReadToken(); err != nil {
						return err
					}
					continue
				}
				if err := enc.WriteToken(jsontext.String(name)); err != nil {
					return err
				}
				if err := canonicalElems(dec, enc); err != nil {
					return err
				}
				continue
			}
			if err := enc.WriteToken(jsontext.String(name)); err != nil {
				return err
			}
			if err := canonicalValue(dec, enc); err != nil {
				return err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		return enc.WriteToken(jsontext.EndObject)
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		return canonicalElems(dec, enc)
	}
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return enc.WriteValue(val)
}

// canonicalElems writes an array whose '[' was read: its elements, then ']'.
func canonicalElems(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	if err := enc.WriteToken(jsontext.BeginArray); err != nil {
		return err
	}
	for dec.PeekKind() != ']' {
		if err := canonicalValue(dec, enc); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	return enc.WriteToken(jsontext.EndArray)
}

// fields is a JSON object's members, in order, with their raw values.
type fields []field

type field struct {
	name  string
	value jsontext.Value
}

// members reads the members of the JSON object obj. Duplicate names are an error (jsontext's default).
func members(obj []byte) (fields, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, errors.New("not an object")
	}
	var fs fields
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // before the next read voids tok
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		fs = append(fs, field{name, val.Clone()})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	return fs, nil
}

func (fs fields) index(name string) int {
	for i, f := range fs {
		if f.name == name {
			return i
		}
	}
	return -1
}

// get returns the value of member name, or nil.
func (fs fields) get(name string) jsontext.Value {
	if i := fs.index(name); i >= 0 {
		return fs[i].value
	}
	return nil
}

// set replaces member name's value, or adds the member at the end.
func (fs *fields) set(name string, v jsontext.Value) {
	if i := fs.index(name); i >= 0 {
		(*fs)[i].value = v
		return
	}
	*fs = append(*fs, field{name, v})
}

// optional prunes member name with decode, dropping it when it stays malformed (or is null).
func (fs *fields) optional(name string, decode func([]byte) error, droppable func([]string) bool) {
	i := fs.index(name)
	if i < 0 {
		return
	}
	v, err := prune((*fs)[i].value, decode, droppable)
	if err != nil || v.Kind() == 'n' {
		*fs = slices.Delete(*fs, i, i+1)
		return
	}
	(*fs)[i].value = v
}

// meta keeps member name only if it is an object (a _meta of another kind is dropped, null included).
func (fs *fields) meta(name string) {
	if i := fs.index(name); i >= 0 && (*fs)[i].value.Kind() != '{' {
		*fs = slices.Delete(*fs, i, i+1)
	}
}

// encode writes the members as a JSON object.
func (fs fields) encode() jsontext.Value {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(quote(f.name))
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
