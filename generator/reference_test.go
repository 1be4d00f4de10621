package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridgekit/bridgekit/generator/codegen"
	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/naming"
	"github.com/bridgekit/bridgekit/generator/internal/schema"
)

// The catalogue format must carry every method of the reference catalogues in
// ../shared/reference without changing shape. These tests convert each entry
// into the format (schemas become $defs of a synthetic schema file), then
// parse and validate the result with the code the generator uses; Harn's
// catalogue is also generated into a temporary module and built.

const shared = "../../shared/reference"

type refEntry struct {
	Method    string          `json:"method"`
	Direction string          `json:"direction"`
	Kind      string          `json:"kind"`
	Role      string          `json:"role"`
	Params    json.RawMessage `json:"params"`
	Payload   json.RawMessage `json:"payload"`
	Result    json.RawMessage `json:"result"`
	Errors    []any           `json:"errors"`
	Status    string          `json:"status"`
	Operation string          `json:"operation"`
	FrameMeth string          `json:"frame_method"`
	Transport string          `json:"transport"`
	Notes     string          `json:"notes"`
	Docs      string          `json:"docs"`
	Source    string          `json:"source"`
}

func loadRef(t *testing.T, name string) []refEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(shared, name))
	if err != nil {
		if os.Getenv("CI") != "" { // .ci/run always lays shared/ beside the checkout
			t.Fatalf("reference material missing in CI: %v", err)
		}
		t.Skipf("reference material not present: %v", err)
	}
	var es []refEntry
	if err := json.Unmarshal(data, &es); err != nil {
		t.Fatal(err)
	}
	return es
}

func status(s string) catalogue.Status {
	switch {
	case s == "" || s == "current":
		return catalogue.Stable
	case strings.HasPrefix(s, "retired"):
		return catalogue.Retired
	default:
		return catalogue.LegacyTolerated
	}
}

func kind(k string) catalogue.Kind {
	switch k {
	case "request|notification":
		return catalogue.RequestOrNotification
	case "initialize":
		return catalogue.Request
	}
	return catalogue.Kind(k)
}

// builder accumulates one synthetic catalogue.
type builder struct {
	cat    catalogue.Catalogue
	defs   map[string]json.RawMessage
	byKey  map[string]int
	goUsed map[string]int
}

func newBuilder(protocol string, framing catalogue.Framing, sides ...string) *builder {
	b := &builder{defs: map[string]json.RawMessage{}, byKey: map[string]int{}, goUsed: map[string]int{}}
	pkg := strings.ReplaceAll(protocol, "-", "")
	b.cat = catalogue.Catalogue{Protocol: protocol, Title: protocol, Package: pkg, Framing: framing, Schemas: []string{pkg + ".schema.json"}}
	if framing == catalogue.EnvelopeNDJSON {
		b.cat.Envelope = &catalogue.Envelope{Protocol: protocol, Version: 1}
	}
	for _, s := range sides {
		b.cat.Sides = append(b.cat.Sides, catalogue.Side{Name: s, Go: strings.ToUpper(s[:1]) + s[1:]})
	}
	return b
}

// def adds schema as a $def named after its use (a method's params or
// result), so generated types get readable names.
func (b *builder) def(schema json.RawMessage, use string) *string {
	if len(schema) == 0 || string(schema) == "null" {
		return nil
	}
	name := strings.ToLower(strings.Join(naming.Words(use), "_"))
	for n := 2; b.defs[name] != nil; n++ {
		name = fmt.Sprintf("%s_%d", strings.ToLower(strings.Join(naming.Words(use), "_")), n)
	}
	b.defs[name] = schema
	ref := b.cat.Schemas[0] + "#/$defs/" + name
	return &ref
}

func (b *builder) goName(wire string) string {
	var sb strings.Builder
	for _, w := range strings.FieldsFunc(wire, func(r rune) bool { return r == '/' || r == '_' || r == '.' || r == '-' || r == ':' }) {
		sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	n := sb.String()
	if n == "" || n[0] < 'A' || n[0] > 'Z' {
		n = "X" + n
	}
	b.goUsed[n]++
	if c := b.goUsed[n]; c > 1 {
		n = fmt.Sprintf("%s%d", n, c)
	}
	return n
}

func errs(list []any) []catalogue.Error {
	out := []catalogue.Error{}
	for _, e := range list {
		code, _ := json.Marshal(-32000)
		when := fmt.Sprint(e)
		if s, ok := e.(string); ok && !strings.Contains(s, " ") {
			code, _ = json.Marshal(s) // AgentPM string codes
		}
		out = append(out, catalogue.Error{Code: code, When: when})
	}
	return out
}

func (b *builder) method(wire, from, to string, e refEntry, params json.RawMessage, qual map[string]string) *catalogue.Method {
	key := wire + "|" + from + ">" + to + fmt.Sprint(qual)
	if i, ok := b.byKey[key]; ok {
		return &b.cat.Methods[i]
	}
	b.byKey[key] = len(b.cat.Methods)
	b.cat.Methods = append(b.cat.Methods, catalogue.Method{
		Wire: wire, Go: b.goName(wire + fmt.Sprint(qual["service"])), Qualifier: qual, From: from, To: to,
		Kind: kind(e.Kind), Params: b.def(params, wire+" "+fmt.Sprint(qual["service"])+" params"), Result: b.def(e.Result, wire+" "+fmt.Sprint(qual["service"])+" result"), Errors: errs(e.Errors),
		Status: status(e.Status), Source: e.Source, Doc: e.Notes,
	})
	m := &b.cat.Methods[len(b.cat.Methods)-1]
	if m.Kind == catalogue.Notification || m.Kind == catalogue.Event {
		m.Result = nil
	}
	return m
}

func (b *builder) check(t *testing.T) int {
	t.Helper()
	data, err := json.Marshal(b.cat)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalogue.Parse(data)
	if err != nil {
		t.Fatalf("%s does not fit the catalogue format: %v", b.cat.Protocol, err)
	}
	n := len(c.Methods)
	for _, m := range c.Methods {
		if m.Operations != nil {
			n += len(m.Operations.Items)
		}
	}
	return n
}

func TestFormatCarriesHarnReference(t *testing.T) {
	entries := loadRef(t, "harn/catalogue.json")
	// One catalogue per protocol family: the stdio bridge (host/vm), Harn's A2A
	// client, and the DAP reverse request.
	bridge := newBuilder("harn-bridge", catalogue.JSONRPC2NDJSON, "host", "vm")
	a2a := newBuilder("harn-a2a", catalogue.JSONRPC2NDJSON, "harn", "peer")
	dap := newBuilder("harn-dap", catalogue.StdoutJSON, "adapter", "client")
	carried := 0
	for _, e := range entries {
		var b *builder
		var from, to string
		switch {
		case strings.HasPrefix(e.Direction, "vm->host"):
			b, from, to = bridge, "vm", "host"
		case strings.HasPrefix(e.Direction, "host->vm"):
			b, from, to = bridge, "host", "vm"
		case strings.Contains(e.Direction, "A2A"):
			b, from, to = a2a, "harn", "peer"
		case strings.Contains(e.Direction, "debug adapter"):
			b, from, to = dap, "adapter", "client"
		default:
			t.Fatalf("%s: unmapped direction %q", e.Method, e.Direction)
		}
		if e.Operation == "" {
			b.method(e.Method, from, to, e, e.Params, nil)
			carried++
			continue
		}
		// host/call operations: the generic entry is the method, each named op an operation.
		m := b.method(e.Method, from, to, refEntry{Kind: "request", Status: "current"}, json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"args":{}},"required":["name","args"]}`), nil)
		if m.Operations == nil {
			m.Operations = &catalogue.Operations{Selector: []string{"name"}, Payload: "args"}
		}
		capability, op, _ := strings.Cut(e.Operation, ".")
		m.Operations.Items = append(m.Operations.Items, catalogue.Operation{
			Match: map[string]string{"name": e.Operation}, Go: b.goName(e.Operation),
			Advertise: &catalogue.Advertise{Capability: capability, Op: op},
			Args:      b.def(e.Params, e.Operation+" args"), Result: b.def(e.Result, e.Operation+" result"), Errors: errs(e.Errors), Status: status(e.Status), Doc: e.Notes,
		})
		carried++
	}
	total := bridge.check(t) + a2a.check(t) + dap.check(t)
	if carried != len(entries) {
		t.Fatalf("carried %d of %d entries", carried, len(entries))
	}
	t.Logf("%d reference entries carried as %d methods and operations", len(entries), total)
	if testing.Short() {
		return
	}
	// Every schema of the reference must also load, build into the IR and
	// generate Go that compiles against the runtime.
	root := t.TempDir()
	fields := map[string]schema.FieldOverride{}
	for _, b := range []*builder{bridge, a2a, dap} {
		b.write(t, root, fields)
	}
	// Harn accepts some members in two casings (callId and call_id): name
	// the snake_case twin in the overrides, as a maintainer would.
	ov, err := codegen.CanonicalJSON(map[string]any{"fields": fields})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "spec", "overrides.json"), ov, 0o644); err != nil {
		t.Fatal(err)
	}
	written, err := Generate(root)
	if err != nil {
		t.Fatalf("generating Harn's reference catalogue: %v", err)
	}
	mod := tempModule(t)
	for _, b := range []*builder{bridge, a2a, dap} {
		copyPackage(t, filepath.Join(root, "gen", b.cat.Package), filepath.Join(mod, b.cat.Package), true)
	}
	goIn(t, mod, "vet", "./...")
	goIn(t, mod, "test", "-count=1", "-run", "^$", "-fuzz", "^FuzzTypes$", "-fuzztime", "200x", "./"+bridge.cat.Package)
	t.Logf("generated and built: %d files", len(written))
}

// write lays the catalogue and its schema file out under root/spec, adding
// a field override for every member whose Go name another member of the same
// object already has.
func (b *builder) write(t *testing.T, root string, fields map[string]schema.FieldOverride) {
	t.Helper()
	names := make([]string, 0, len(b.defs))
	for k := range b.defs {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, n := range names {
		var v any
		if err := json.Unmarshal(b.defs[n], &v); err != nil {
			t.Fatal(err)
		}
		twins(v, b.cat.Schemas[0]+"#/$defs/"+n, fields)
	}
	var sb strings.Builder
	sb.WriteString(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{`)
	for i, n := range names {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "%q:%s", n, b.defs[n])
	}
	sb.WriteString("}}")
	for _, dir := range []string{"spec/catalogue", "spec/schemas"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "spec/schemas", b.cat.Schemas[0]), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := FormatCatalogue(&b.cat)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "spec/catalogue", b.cat.Package+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFormatCarriesAgentPMMachineReference(t *testing.T) {
	entries := loadRef(t, "agentpm/machine.json")
	b := newBuilder("agentpm-harness-machine", catalogue.EnvelopeNDJSON, "client", "harness")
	carried := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Method, "(") {
			// (envelope), (response), (error), (unknown method) describe framing, not methods.
			continue
		}
		from, to, _ := strings.Cut(e.Direction, "->")
		if e.FrameMeth == "" {
			b.method(e.Method, from, to, e, e.Payload, nil)
			carried++
			continue
		}
		m := b.method(e.FrameMeth, from, to, refEntry{Kind: "request"}, json.RawMessage(`{"type":"object","properties":{"role":{"type":"string"},"method":{"type":"string"},"payload":{}},"required":["role","method","payload"]}`), nil)
		if m.Operations == nil {
			m.Operations = &catalogue.Operations{Selector: []string{"role", "method"}, Payload: "payload"}
		}
		role, method, _ := strings.Cut(strings.TrimPrefix(e.Method, e.FrameMeth+":"), "/")
		m.Operations.Items = append(m.Operations.Items, catalogue.Operation{
			Match: map[string]string{"role": role, "method": method}, Go: b.goName(e.Method),
			Args: b.def(e.Payload, e.Method+" args"), Result: b.def(e.Result, e.Method+" result"), Errors: errs(e.Errors), Status: catalogue.Stable, Doc: e.Notes,
		})
		carried++
	}
	b.check(t)
	t.Logf("%d machine methods and operations carried", carried)
}

func TestFormatCarriesAgentPMServiceReference(t *testing.T) {
	entries := loadRef(t, "agentpm/service.json")
	b := newBuilder("agentpm-service", catalogue.EnvelopeNDJSON, "harness", "service")
	carried := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Method, "(") {
			continue
		}
		from, to, _ := strings.Cut(e.Direction, "->")
		// A method is identified by its name together with the envelope's service member.
		b.method(e.Method, from, to, e, e.Payload, map[string]string{"service": e.Role})
		carried++
	}
	b.check(t)
	if carried == 0 {
		t.Fatal("no service methods")
	}
}

// twins walks a schema and records overrides for members whose Go name an
// earlier member of the same object has (JSON property order).
func twins(v any, ptr string, fields map[string]schema.FieldOverride) {
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			switch k {
			case "properties":
				props, _ := c.(map[string]any)
				names := make([]string, 0, len(props))
				for p := range props {
					names = append(names, p)
				}
				// camelCase first, so the snake_case twin is the renamed one.
				slices.SortFunc(names, func(a, b string) int {
					if ua, ub := strings.Contains(a, "_"), strings.Contains(b, "_"); ua != ub {
						if ua {
							return 1
						}
						return -1
					}
					return strings.Compare(a, b)
				})
				seen := map[string]bool{}
				for _, p := range names {
					g := naming.Go(p)
					if seen[g] {
						fields[ptr+"/properties/"+p] = schema.FieldOverride{Go: g + "Snake", Reason: "snake_case twin of a camelCase member"}
					}
					seen[g] = true
					twins(props[p], ptr+"/properties/"+p, fields)
				}
			case "items", "additionalProperties":
				twins(c, ptr+"/"+k, fields)
			case "anyOf", "oneOf", "allOf":
				list, _ := c.([]any)
				for i, e := range list {
					twins(e, fmt.Sprintf("%s/%s/%d", ptr, k, i), fields)
				}
			}
		}
	}
}
