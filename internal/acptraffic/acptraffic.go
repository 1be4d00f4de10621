// Package acptraffic decodes recorded ACP traffic (internal/recorder
// frames) with gen/acp's types (or gen/acpunstable's) and reports what the
// types do not cover.
//
// Decode matches every frame to its method: a request or notification by
// its method name in acp.Methods, a reply through its request's id (a
// request sent in one direction is answered in the other). The params or
// result is decoded into the generated type of that method (the parameter
// and result types of the AgentPeer or ClientPeer method the catalogue
// names, found by reflection, so that the package follows gen/acp as it is
// regenerated) and encoded again; Message.Reencoded holds the encoding.
//
// Untyped lists the members of a decoded value that its types keep only as
// raw JSON: members a generated struct keeps in Extra, and union values
// kept in Unknown, outside `_meta` (which is open by design).
package acptraffic

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/acpunstable"
	"github.com/bridgekit/bridgekit/internal/recorder"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Kinds of message.
const (
	Request      = "request"
	Notification = "notification"
	Result       = "result"
	Error        = "error"
)

// Message is one decoded frame.
type Message struct {
	Frame recorder.Frame
	// Method is the frame's method, or its request's for a reply.
	Method string
	Kind   string
	// Part is "params" or "result" (or "error").
	Part string
	// Raw is the params, result or error as it arrived.
	Raw jsontext.Value
	// Value is Raw decoded into the generated type (a pointer), nil for an
	// error reply or an absent params.
	Value any
	// Reencoded is Value encoded again.
	Reencoded []byte
	// Untyped says the method is not in the package's catalogue (an
	// extension method such as claude-agent-acp's _auth/status_update):
	// Value is nil, Raw is kept.
	Untyped bool
}

// envelope is a JSON-RPC frame's members.
type envelope struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id,omitzero"`
	Method  string         `json:"method,omitzero"`
	Params  jsontext.Value `json:"params,omitzero"`
	Result  jsontext.Value `json:"result,omitzero"`
	Error   jsontext.Value `json:"error,omitzero"`
}

type types struct {
	params, result reflect.Type // nil result: a notification
}

// Package is a generated ACP package as Decode reads it: its method table
// and its two peer types.
type Package struct {
	Methods []wire.MethodInfo
	// AgentPeer is the type a client calls the agent through (*acp.AgentPeer),
	// ClientPeer the one an agent calls the client through.
	AgentPeer, ClientPeer reflect.Type
}

// Stable is gen/acp, the package Decode uses.
var Stable = Package{acp.Methods, reflect.TypeFor[*acp.AgentPeer](), reflect.TypeFor[*acp.ClientPeer]()}

// Unstable is gen/acpunstable, ACP's opt-in unstable superset.
var Unstable = Package{acpunstable.Methods, reflect.TypeFor[*acpunstable.AgentPeer](), reflect.TypeFor[*acpunstable.ClientPeer]()}

// methodTypes maps each catalogued wire name to its Go types. A wire name
// served by both sides (the unstable mcp/message) keeps its first entry.
func (p Package) methodTypes() map[string]types {
	out := map[string]types{}
	peers := map[string]reflect.Type{"client": p.AgentPeer, "agent": p.ClientPeer}
	for _, m := range p.Methods {
		if _, dup := out[m.Wire]; dup {
			continue
		}
		peer := peers[m.From]
		if peer == nil {
			continue
		}
		fn, ok := peer.MethodByName(m.Go)
		if !ok || fn.Type.NumIn() != 3 {
			continue
		}
		t := types{params: fn.Type.In(2).Elem()}
		if fn.Type.NumOut() == 2 {
			t.result = fn.Type.Out(0).Elem()
		}
		out[m.Wire] = t
	}
	return out
}

// Decode decodes every frame (see the package doc). It returns the
// messages it could decode and an error for each frame it could not, with
// the frame's sequence number.
func Decode(frames []recorder.Frame) ([]Message, []error) { return Stable.Decode(frames) }

// Decode is Decode with p's types.
func (p Package) Decode(frames []recorder.Frame) ([]Message, []error) {
	known := p.methodTypes()
	type key struct {
		dir string
		id  string
	}
	pending := map[key]string{}
	var msgs []Message
	var errs []error
	fail := func(f recorder.Frame, format string, args ...any) {
		errs = append(errs, fmt.Errorf("frame %d (%s %s): %s", f.Seq, f.Dir, f.Method, fmt.Sprintf(format, args...)))
	}
	for _, f := range frames {
		if f.Cut {
			fail(f, "recorded cut (over %d bytes)", recorder.MaxLine)
			continue
		}
		var env envelope
		if err := json.Unmarshal([]byte(f.Line), &env, json.RejectUnknownMembers(true)); err != nil {
			fail(f, "not a JSON-RPC frame: %v", err)
			continue
		}
		if env.JSONRPC != "2.0" {
			fail(f, "jsonrpc %q", env.JSONRPC)
			continue
		}
		m := Message{Frame: f}
		var typ reflect.Type
		switch {
		case env.Method != "":
			t, ok := known[env.Method]
			if !ok {
				// An extension method: kept as it came, and listed by
				// Untyped's callers as a method no type covers.
				m.Method, m.Part, m.Raw, m.Untyped, m.Kind = env.Method, "params", env.Params, true, Notification
				if len(env.ID) > 0 {
					m.Kind = Request
					pending[key{f.Dir, string(env.ID)}] = env.Method
				}
				msgs = append(msgs, m)
				continue
			}
			m.Method, m.Part, m.Raw, typ = env.Method, "params", env.Params, t.params
			m.Kind = Notification
			if len(env.ID) > 0 {
				m.Kind = Request
				if t.result == nil {
					fail(f, "%s is a notification but has an id", env.Method)
					continue
				}
				pending[key{f.Dir, string(env.ID)}] = env.Method
			} else if t.result != nil {
				fail(f, "%s is a request but has no id", env.Method)
				continue
			}
		case len(env.ID) > 0:
			reqDir := recorder.Send
			if f.Dir == recorder.Send {
				reqDir = recorder.Recv
			}
			k := key{reqDir, string(env.ID)}
			method, ok := pending[k]
			if !ok {
				fail(f, "reply to id %s, which no request in the other direction has", env.ID)
				continue
			}
			delete(pending, k)
			m.Method = method
			if _, typed := known[method]; !typed {
				m.Kind, m.Part, m.Raw, m.Untyped = Result, "result", env.Result, true
				if len(env.Error) > 0 {
					m.Kind, m.Part, m.Raw = Error, "error", env.Error
				}
				msgs = append(msgs, m)
				continue
			}
			if len(env.Error) > 0 {
				m.Kind, m.Part, m.Raw = Error, "error", env.Error
				msgs = append(msgs, m)
				continue
			}
			m.Kind, m.Part, m.Raw, typ = Result, "result", env.Result, known[method].result
		default:
			fail(f, "neither a method nor an id")
			continue
		}
		if len(m.Raw) == 0 {
			msgs = append(msgs, m)
			continue
		}
		v := reflect.New(typ).Interface()
		if err := json.Unmarshal(m.Raw, v); err != nil {
			fail(f, "%s %s does not decode into %s: %v", m.Method, m.Part, typ.Name(), err)
			continue
		}
		enc, err := json.Marshal(v)
		if err != nil {
			fail(f, "%s %s does not encode again: %v", m.Method, m.Part, err)
			continue
		}
		m.Value, m.Reencoded = v, enc
		msgs = append(msgs, m)
	}
	for k, method := range pending {
		errs = append(errs, fmt.Errorf("%s request id %s (%s) was never answered", k.dir, k.id, method))
	}
	return msgs, errs
}

// Untyped returns the places in v where its types keep a member or value
// only as raw JSON, sorted and without duplicates:
//
//	AgentCapabilities.auth             a member kept in Extra
//	SessionUpdate{sessionUpdate=usage_update}  a union variant kept in Unknown
//
// Members under _meta are not listed.
func Untyped(v any) []string {
	seen := map[string]bool{}
	walk(reflect.ValueOf(v), seen, 0)
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

var (
	rawType    = reflect.TypeFor[jsontext.Value]()
	extrasType = reflect.TypeFor[wire.Extras]()
)

func walk(v reflect.Value, seen map[string]bool, depth int) {
	if depth > 64 || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), seen, depth+1)
		}
	case reflect.Struct:
		t := v.Type()
		if get := v.MethodByName("Get"); get.IsValid() && get.Type().NumIn() == 0 && get.Type().NumOut() == 2 && strings.HasPrefix(t.Name(), "Nullable[") {
			out := get.Call(nil)
			if out[1].Bool() {
				walk(out[0], seen, depth+1)
			}
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "Meta" {
				continue
			}
			fv := v.Field(i)
			switch {
			case f.Type == extrasType:
				for _, m := range fv.Interface().(wire.Extras) {
					if m.Name != "_meta" {
						seen[t.Name()+"."+m.Name] = true
					}
				}
			case f.Name == "Unknown" && f.Type == rawType:
				if raw := fv.Interface().(jsontext.Value); len(raw) > 0 {
					seen[t.Name()+unknownTag(raw)] = true
				}
			default:
				walk(fv, seen, depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == rawType || v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			walk(v.Index(i), seen, depth+1)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			walk(v.MapIndex(k), seen, depth+1)
		}
	}
}

// unknownTag describes an unknown union value by its tag members: the
// string members among the usual discriminators.
func unknownTag(raw jsontext.Value) string {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return "{" + strings.TrimSpace(string(bytes.TrimSpace(raw))[:min(len(raw), 20)]) + "}"
	}
	var tags []string
	for _, k := range []string{"type", "sessionUpdate", "outcome", "kind"} {
		if s, ok := obj[k].(string); ok {
			tags = append(tags, k+"="+s)
		}
	}
	if len(tags) == 0 {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return "{members " + strings.Join(keys, ",") + "}"
	}
	return "{" + strings.Join(tags, ",") + "}"
}
