package frames

// This file is the seam between the classifier and the generated packages:
// the only place that names gen/acp, gen/harn, gen/agentpmmachine and
// gen/agentpmservice. When a generated package changes (gen/acp moving to
// ACP stable v1), this is the one place to adapt.

import (
	"reflect"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Family names a protocol family as it appears in records.
type Family string

// The families the classifier knows. Harn's bridge is a JSON-RPC stream
// that carries ACP and Harn's own methods; a stream is taken for Harn's as
// soon as a method only Harn has appears.
const (
	Unknown        Family = ""
	ACP            Family = "acp"
	Harn           Family = "harn"
	AgentPMMachine Family = "agentpm-machine"
	AgentPMService Family = "agentpm-service"
)

// Families lists the families in the order the classifier tries them.
var Families = []Family{ACP, Harn, AgentPMMachine, AgentPMService}

// catalogue is what the classifier needs of one generated package.
type catalogue struct {
	family  Family
	methods []wire.MethodInfo
	// handlers are zero values of the package's handler structs, whose
	// func fields (named after MethodInfo.Go) give each method's params and
	// result types.
	handlers []any
	codec    func() rpc.Codec
}

var catalogues = map[Family]*catalogue{
	ACP: {family: ACP, methods: acp.Methods,
		handlers: []any{acp.AgentHandlers{}, acp.ClientHandlers{}}, codec: acp.NewCodec},
	Harn: {family: Harn, methods: harn.Methods,
		handlers: []any{harn.HostHandlers{}, harn.VMHandlers{}}, codec: harn.NewCodec},
	AgentPMMachine: {family: AgentPMMachine, methods: agentpmmachine.Methods,
		handlers: []any{agentpmmachine.ClientHandlers{}, agentpmmachine.HarnessHandlers{}},
		codec:    func() rpc.Codec { return agentpmmachine.NewCodec("", "") }},
	AgentPMService: {family: AgentPMService, methods: agentpmservice.Methods,
		handlers: []any{agentpmservice.ServiceHandlers{}},
		codec:    func() rpc.Codec { return agentpmservice.NewCodec("", "") }},
}

// envelopeProtocols maps the protocol member of AgentPM's envelopes to
// their family.
var envelopeProtocols = map[string]Family{
	"agentpm-harness-machine": AgentPMMachine,
	"agentpm-service":         AgentPMService,
}

// Method is one catalogue method with the Go types of its params and
// result (nil when the generated package has no typed field for it, or
// the value is free-form).
type Method struct {
	Family Family
	Info   wire.MethodInfo
	Params reflect.Type
	Result reflect.Type
}

type methodKey struct {
	wire, qualifier string
}

// index is the method table of one family, built once from its catalogue.
type index struct {
	codec   func() rpc.Codec
	methods map[methodKey]*Method
}

var indexes = func() map[Family]*index {
	out := map[Family]*index{}
	for f, c := range catalogues {
		idx := &index{codec: c.codec, methods: map[methodKey]*Method{}}
		fields := map[string]reflect.Type{}
		for _, h := range c.handlers {
			t := reflect.TypeOf(h)
			for i := range t.NumField() {
				fld := t.Field(i)
				if fld.Type.Kind() == reflect.Func {
					fields[fld.Name] = fld.Type
				}
			}
		}
		for _, mi := range c.methods {
			m := &Method{Family: f, Info: mi}
			if ft, ok := fields[mi.Go]; ok && ft.NumIn() == 2 {
				m.Params = typed(ft.In(1))
				if ft.NumOut() == 2 {
					m.Result = typed(ft.Out(0))
				}
			}
			k := methodKey{mi.Wire, mi.Qualifier}
			if _, dup := idx.methods[k]; !dup {
				idx.methods[k] = m
			}
		}
		out[f] = idx
	}
	return out
}()

var rawValue = reflect.TypeFor[[]byte]()

// typed returns the type to decode into for a handler's argument or result
// type t, or nil when t takes any JSON (jsontext.Value, json.RawMessage).
func typed(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 || t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

// Lookup returns the catalogue method of family f named wire (with the
// qualifier for agentpm-service, "" otherwise), or nil. For Harn it falls
// back to ACP's methods, which Harn's bridge carries.
func Lookup(f Family, wireName, qualifier string) *Method {
	if idx := indexes[f]; idx != nil {
		if m := idx.methods[methodKey{wireName, qualifier}]; m != nil {
			return m
		}
		if f == AgentPMService && qualifier != "" {
			// A frame whose service member the catalogue does not use
			// for this method (events, say) is still that method.
			if m := idx.methods[methodKey{wireName, ""}]; m != nil {
				return m
			}
		}
	}
	if f == Harn {
		return Lookup(ACP, wireName, qualifier)
	}
	return nil
}

// decode unmarshals body into a new value of t, a pointer to which it
// returns, with the generated type's own checks (required members, closed
// objects, kinds, constraints), and for Harn's stream under Harn's
// contract, as a Harn connection decodes (harn.BridgeConnOptions): ACP
// members Harn moved under _meta.harn are problems there, extra members of
// a plain ACP peer.
func decode(f Family, t reflect.Type, body []byte) (any, error) {
	v := reflect.New(t).Interface()
	var err error
	if f == Harn {
		err = json.Unmarshal(body, v, harn.ContractHarn.Options())
	} else {
		err = wire.Unmarshal(body, v)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}
